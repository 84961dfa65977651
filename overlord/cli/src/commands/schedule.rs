//! `func schedule list | add | remove | enable | disable`: the schedules
//! func-api runs (DESIGN §14), managed from the command line with the same
//! rules as `/api/v1/schedules` (`schedule::manage`). The command line's
//! user holds the overlord key: an administrator, and the owner of what it
//! adds (`cli:USER`'s limit is `[api] max_schedules_per_owner` too).

use serde_json::json;

use crate::cli::{ScheduleAddArgs, ScheduleCommand};
use overlord::gate::rights::Rights;
use overlord::plan::{Plan, PlanError};
use overlord_schedule::manage::{self, NewSchedule};
use overlord_schedule::Owner;

#[derive(Debug)]
pub struct Schedule(pub ScheduleCommand);

impl Schedule {
    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let store = plan.store();
        match &self.0 {
            ScheduleCommand::List => list(plan, &store),
            ScheduleCommand::Add(args) => add(plan, &store, args),
            ScheduleCommand::Remove { name } => {
                manage::remove(&store, &plan.root, name)?;
                say(
                    plan,
                    json!({"name": name, "removed": true}),
                    &format!("schedule {name} removed"),
                );
                Ok(0)
            }
            ScheduleCommand::Enable { name } | ScheduleCommand::Disable { name } => {
                let enable = matches!(self.0, ScheduleCommand::Enable { .. });
                let s = manage::set_enabled(&store, &plan.root, name, enable)?;
                let line = match s.due.filter(|_| s.enabled) {
                    Some(next) => format!(
                        "schedule {name} enabled: next run {}",
                        overlord::store::when::show(next)
                    ),
                    None => format!("schedule {name} disabled"),
                };
                say(plan, manage::doc(&store, &s), &line);
                Ok(0)
            }
        }
    }

    /// The audit trail's name for a change (listing is none).
    pub fn audited(&self) -> Option<String> {
        Some(match &self.0 {
            ScheduleCommand::List => return None,
            ScheduleCommand::Add(a) => format!("schedule add {}", a.name),
            ScheduleCommand::Remove { name } => format!("schedule remove {name}"),
            ScheduleCommand::Enable { name } => format!("schedule enable {name}"),
            ScheduleCommand::Disable { name } => format!("schedule disable {name}"),
        })
    }
}

fn say(plan: &Plan, doc: serde_json::Value, line: &str) {
    match plan.json {
        true => crate::display::output::print_doc(plan.out, &doc),
        false => overlord::outln!("{}", crate::display::output::shown_line(line)),
    }
}

/// Refuses a `--notify` target overlord.conf does not set (a typo would
/// tell nobody).
fn known_targets(plan: &Plan, names: &[String]) -> Result<(), PlanError> {
    let conf = overlord::conf::OverlordConf::of(&plan.root)?;
    match names
        .iter()
        .find(|n| conf.ini.section(&format!("notify.{n}")).is_none())
    {
        None => Ok(()),
        Some(unknown) => Err(PlanError::usage(format!(
            "--notify {unknown}: no [notify.{unknown}] in {}",
            plan.root.overlord_conf().display()
        ))),
    }
}

fn add(plan: &Plan, store: &overlord::store::Store, a: &ScheduleAddArgs) -> Result<i32, PlanError> {
    plan.check_credentials()?;
    let mut request = json!({
        "spec": a.spec,
        "module": a.module,
        "method": a.method,
        "args": a.args,
    });
    let fields = [
        ("exclude", a.exclude.clone()),
        ("batch", a.batch.clone()),
        ("batch_wait", a.batch_wait.clone()),
        ("timeout", a.timeout.clone()),
        ("filter", a.filter.clone()),
        ("filteror", a.filteror.clone()),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            request[key] = json!(v);
        }
    }
    if a.failhard {
        request["failhard"] = json!(true);
    }
    if a.delegate {
        request["delegate"] = json!(true);
    }
    known_targets(plan, &a.notify)?;
    let new = NewSchedule {
        name: a.name.clone(),
        request,
        cron: a.cron.clone(),
        every: a.every,
        enabled: !a.disabled,
        notify: a.notify.clone(),
    };
    let owner = Owner {
        user: overlord::principal::cli_user(),
        token: None,
        person: None,
    };
    // Its function must exist on a host it targets (a typo would fail
    // every run): asked of the hosts now, unless they are behind relays.
    if !a.delegate {
        let call = overlord_schedule::call_of(&new.request)?;
        let targets = overlord::gate::rights::authorize_call(&plan.root, &Rights::admin(), &call)?;
        let ask = overlord::calling::call_action(manage::LIST_METHODS, Vec::new())?;
        let answers = overlord::calling::dispatch_to(plan, &targets, &ask, |_, _| {})?;
        manage::method_known(&call.function(), &answers)?;
    }
    let per_owner = overlord_schedule::per_owner(&plan.root);
    // An administrator's: no rate bound (`min_every_limited` is for limited tokens).
    let s = manage::add(
        store,
        &plan.root,
        new,
        owner,
        &Rights::admin(),
        per_owner,
        overlord_schedule::MIN_EVERY,
    )?;
    let next = s
        .due
        .map_or("never (disabled)".to_string(), overlord::store::when::show);
    say(
        plan,
        manage::doc(store, &s),
        &format!("schedule {} added: next run {next} (func-api runs it)", s.name),
    );
    Ok(0)
}

fn list(plan: &Plan, store: &overlord::store::Store) -> Result<i32, PlanError> {
    let all = manage::list(store)?;
    if plan.json {
        // The API's shape (`GET /api/v1/schedules`), as `jobs list` is the API's.
        let doc = json!({ "schedules": manage::docs(store, &all) });
        crate::display::output::print_doc(plan.out, &doc);
        return Ok(0);
    }
    if all.is_empty() {
        overlord::outln!("no schedules in {}", store.shown());
        return Ok(0);
    }
    let mut table = vec![[
        "NAME".to_string(),
        "WHEN".into(),
        "CALL".into(),
        "TARGET".into(),
        "NEXT RUN (UTC)".into(),
        "LAST RUN (UTC)".into(),
        "LAST OUTCOME".into(),
        "OWNER".into(),
    ]];
    for (s, doc) in all.iter().zip(manage::docs(store, &all)) {
        let when = match (&s.cron, s.every) {
            (Some(c), _) => format!("cron {c}"),
            (None, Some(e)) => format!("every {e}s"),
            _ => "-".into(),
        };
        let call = format!(
            "{}.{}",
            s.request["module"].as_str().unwrap_or("?"),
            s.request["method"].as_str().unwrap_or("?")
        );
        table.push([
            s.name.clone(),
            when,
            call,
            s.request["spec"].as_str().unwrap_or("?").to_string(),
            match (s.enabled, s.due) {
                (true, Some(d)) => overlord::store::when::show(d),
                _ => "disabled".into(),
            },
            s.last_run.map_or_else(|| "-".into(), overlord::store::when::show),
            doc["last_outcome"].as_str().unwrap_or("-").to_string(),
            s.owner.user.clone(),
        ]);
    }
    crate::display::output::print_table(&mut table);
    for s in all.iter().filter(|s| s.disabled_reason.is_some()) {
        overlord::outln!(
            "{}: {}",
            s.name,
            crate::display::output::shown_line(s.disabled_reason.as_deref().unwrap_or_default())
        );
    }
    Ok(0)
}
