//! `func-store-conformance URL`: runs the job store's conformance suite
//! (`func_tests::store_conformance`) against the PostgreSQL store at URL
//! (`postgresql://…`, as `[store] url`); one line per check, exit 1 if any
//! failed. `tests/python/test_store_pg.py` runs it on a private server.

use std::process::ExitCode;
use std::sync::Arc;

use overlord::store::postgres::PgStore;
use overlord::store::Store;

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: func-store-conformance postgresql://...");
        return ExitCode::from(2);
    };
    let url = match pgconn::StoreUrl::parse(&url) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("func-store-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let open = move |keep: f64| Store::Postgres(Arc::new(PgStore::new(url.clone(), keep)));
    let mut failed = 0;
    for (name, outcome) in func_tests::store_conformance::run(&open) {
        match outcome {
            Ok(()) => eprintln!("ok      {name}"),
            Err(why) => {
                failed += 1;
                eprintln!("FAILED  {name}: {why}");
            }
        }
    }
    eprintln!("{failed} failed");
    ExitCode::from(u8::from(failed > 0))
}
