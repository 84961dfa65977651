//! The job process, above both `modules` (what a job runs) and `jobs` (the
//! spool and store it reports to): the zygote's side of `funcd
//! --job-zygote` and the runner that executes one job in its own session.

pub mod runner;
pub mod zygote;
