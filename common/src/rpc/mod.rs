//! XML-RPC over HTTP/1.1, shared by the minion, the certmaster and the
//! overlord: [`client`] calls a server (one [`exchange`] per call on a kept
//! connection); [`http`] reads and answers requests
//! on the server side with Func's routes and limits; [`accept`] is the
//! servers' shared accept loop; [`idle`] serves a keep-alive connection and
//! ends it cleanly once idle.

pub mod accept;
pub mod client;
pub mod deadline;
pub mod exchange;
pub mod http;
pub mod idle;
