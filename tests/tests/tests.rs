//! Integration tests: each starts the real `funcd` on loopback with its own
//! `--root` and an ephemeral port (see `func_tests::fixture`).

// Calls and their results over the wire: modules, REMOTE_ERROR, ACLs, audit.
mod minion_calls;
// Malformed, oversized, hostile and slow input on the wire and on the command line.
mod minion_bad_input;
// Mutual TLS: who is refused, and the overlord's server-name check.
mod minion_tls;
// Async jobs on a minion: detached processes, crashes, expiry.
mod minion_jobs;
// Enrollment with a real certmaster, certmaster-ca, pinning, revocation.
mod certmaster;
// The func CLI: targeting, forks, failures, copyfile, groups.
mod overlord;
// func --async, --nopoll, job_status against real minions.
mod overlord_jobs;
// func jobs list / lookup / active / kill.
mod overlord_jobs_mgmt;
// --batch: windows, failhard, liveness, stop, recover.
mod overlord_batch;
// Hardening I: callers limited by an ACL (jobs, system.grep, audit, ACL keys).
mod hardening_callers;
// Hardening I: reserved names, CRL rollback, revoked minions and the overlord.
mod hardening_identity;
// Hardening I: an unprivileged local user (copyfile links, secrets at rest).
mod hardening_local;
// Hardening II: per-caller limits, connection slots, certmaster flood, overlord response cap.
mod limits;
// Hardening II: a corrupt store and a full disk heal without a restart.
mod faults;
// Failure means failure: exit statuses, failhard, a stalled host.
mod overlord_failures;
// func's command line: help, versions, suggestions, options anywhere, man pages, completions.
mod cli;
// Output for people: streaming, summary, progress, colour, natural order.
mod output;
// The job store conformance suite on the embedded store.
mod store_conformance;
// --json shapes in every state, --out formats, typed arguments.
mod json_shapes;
// Other XML-RPC clients' input: encodings, wide ints, dateTime forms, ALPN.
mod compat;
// make install: the layout, units, sample configuration, an installed fleet.
mod install;
mod multihost;
// Drop-in modules in any language: examples, types, misbehaviour, hot reload, safety.
mod dropin;
// 100 minions started at once from one address: all enroll and answer.
mod fleet_start;
// Hardening III on the overlord: forged screens, absurd timeouts, transmit's root, rogue minions.
mod hardening_overlord;
// Habits from Salt and sudo: natural order, spellings, typed args, exit 3, SUDO_USER.
mod user_habits;
// Shared helpers for these tests.
mod helper;
