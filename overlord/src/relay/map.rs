//! The delegation map (Func's `var/lib/func/map`, written by
//! `func-build-map`): YAML in Func's nesting, each name mapping to what is
//! below it — `{}` for a minion, the relay's own map for a relay:
//!
//! ```yaml
//! relay1: {web1: {}, web2: {}, relay2: {db1: {}}}
//! mail1: {}
//! ```
//!
//! [`Routes`] reads it with the `[relays]` section of overlord.conf (where
//! each relay's func-api listens) and says, for a set of hosts, which are
//! called directly and which go through which relay: the first hop of the
//! shortest path (Func's `get_shortest_path`); a minion not in the map is
//! called directly.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use common::paths::Root;

use super::error::RelayError;

/// Largest map file read (100,000 minions take about 2 MB).
pub const MAX_MAP_BYTES: u64 = 64 << 20;
/// Deepest nesting of relays accepted.
pub const MAX_DEPTH: usize = 16;

/// A map: each name and what is below it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[schema(no_recursion)]
pub struct Map(pub BTreeMap<String, Map>);

impl Map {
    /// The default place of the map below `root`.
    pub fn path(root: &Root) -> PathBuf {
        root.join("var/lib/func/map")
    }

    /// Parses Func's YAML (an empty file is an empty map).
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Map::default());
        }
        let map: Map = yaml_serde::from_str(text).map_err(|e| e.to_string())?;
        map.check(0)?;
        Ok(map)
    }

    fn check(&self, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH} relays"));
        }
        for (name, below) in &self.0 {
            if !common::identity::is_valid_host_name(name) {
                return Err(format!("{:?} is not a host name", common::paths::shorten(name)));
            }
            below.check(depth + 1)?;
        }
        Ok(())
    }

    /// Reads the map at `path`; `Ok(None)` when there is none. A link in
    /// its place is refused.
    pub fn load(path: &Path) -> Result<Option<Self>, RelayError> {
        use std::io::Read as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(RelayError::Map {
                    path: path.into(),
                    detail: e.to_string(),
                })
            }
        };
        let mut text = String::new();
        file.take(MAX_MAP_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| RelayError::Map {
                path: path.into(),
                detail: e.to_string(),
            })?;
        if text.len() as u64 > MAX_MAP_BYTES {
            return Err(RelayError::Map {
                path: path.into(),
                detail: format!("larger than {MAX_MAP_BYTES} bytes"),
            });
        }
        Map::parse(&text).map(Some).map_err(|detail| RelayError::Map {
            path: path.into(),
            detail,
        })
    }

    /// Func's YAML of the map.
    pub fn to_yaml(&self) -> String {
        yaml_serde::to_string(self).unwrap_or_default()
    }

    /// Writes the map to `path` (0600, not through a link: to a temporary
    /// file, synced, renamed over it).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            common::private::private_dir(dir)?;
        }
        common::private::write(path, self.to_yaml().as_bytes(), true)
    }

    /// Every minion in the map: the names with nothing below them.
    pub fn minions(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect(&self, out: &mut Vec<String>) {
        for (name, below) in &self.0 {
            match below.0.is_empty() {
                true => out.push(name.clone()),
                false => below.collect(out),
            }
        }
    }

    /// Takes out every host that two places claim (two relays, a relay and
    /// this overlord, or one relay twice, at any depth): a relay's map may
    /// not capture another segment's minion (DESIGN §17). A host the top
    /// holds itself stays direct. Returns one line per host refused.
    pub fn refuse_double_claims(&mut self) -> Vec<String> {
        let mut claims: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, below) in &self.0 {
            match below.0.is_empty() {
                true => claims
                    .entry(name.clone())
                    .or_default()
                    .push("this overlord".into()),
                false => {
                    claims
                        .entry(name.clone())
                        .or_default()
                        .push("this overlord (as a relay)".into());
                    below.claims_below(&format!("relay {name}"), &mut claims);
                }
            }
        }
        let mut refused = Vec::new();
        for (host, by) in claims.into_iter().filter(|(_, by)| by.len() > 1) {
            refused.push(format!(
                "{host} is claimed by {}: left out of every relay",
                by.join(" and ")
            ));
            let top_has_it = self.0.get(&host).is_some_and(|b| b.0.is_empty());
            self.remove_below(&host);
            if !top_has_it {
                self.0.remove(&host);
            }
        }
        refused
    }

    fn claims_below(&self, path: &str, claims: &mut BTreeMap<String, Vec<String>>) {
        for (name, below) in &self.0 {
            if !below.0.is_empty() {
                claims
                    .entry(name.clone())
                    .or_default()
                    .push(format!("{path} (as a relay)"));
                below.claims_below(&format!("{path}/{name}"), claims);
            } else {
                claims.entry(name.clone()).or_default().push(path.to_string());
            }
        }
    }

    /// Removes `host` from every relay's part of the map (an emptied relay
    /// goes too: with nothing below it, it would read as a minion).
    fn remove_below(&mut self, host: &str) {
        self.0.retain(|_, below| {
            if below.0.is_empty() {
                return true;
            }
            below.0.remove(host);
            below.remove_below(host);
            !below.0.is_empty()
        });
    }

    /// `other`'s entries over ours (Func's `--append`: `dict.update`).
    pub fn merge(&mut self, other: Map) {
        self.0.extend(other.0);
    }
}

/// Where a relay's func-api listens (`[relays] NAME = HOST:PORT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayAddr {
    pub name: String,
    /// `host:port`; the relay's certificate must name `host`.
    pub addr: String,
}

impl RelayAddr {
    /// The host part, which the relay's TLS certificate must name.
    pub fn host(&self) -> &str {
        let host = self.addr.rsplit_once(':').map_or(self.addr.as_str(), |(h, _)| h);
        host.trim_start_matches('[').trim_end_matches(']')
    }
}

/// The relays of overlord.conf's `[relays]` section.
pub fn configured(root: &Root) -> Result<BTreeMap<String, RelayAddr>, RelayError> {
    let conf = crate::conf::OverlordConf::or_defaults(root);
    let mut out = BTreeMap::new();
    let Some(section) = conf.ini.section("relays") else {
        return Ok(out);
    };
    for (name, value) in section {
        let addr = value.trim().trim_start_matches("https://").trim_end_matches('/');
        if !common::identity::is_valid_host_name(name) || !certmaster_server::store::is_host_port(addr) {
            return Err(RelayError::Config(format!(
                "[relays] {name} = {value}: a relay is NAME = HOST:PORT (its func-api)"
            )));
        }
        out.insert(
            name.clone(),
            RelayAddr {
                name: name.clone(),
                addr: addr.to_string(),
            },
        );
    }
    Ok(out)
}

/// Which hosts go through which relay.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    /// Minion → the relays on its path, the first hop first (the last one
    /// calls it itself).
    path: HashMap<String, Vec<String>>,
    /// Every minion the map names (direct ones too).
    minions: Vec<String>,
    relays: BTreeMap<String, RelayAddr>,
}

impl Routes {
    /// The routes of the map at `mapfile` (default: `var/lib/func/map`, or
    /// the shared store's copy) and overlord.conf's `[relays]`; `None`
    /// when there is no map.
    pub fn load(root: &Root, mapfile: Option<&Path>) -> Result<Option<Self>, RelayError> {
        let path = mapfile.map_or_else(|| Map::path(root), Path::to_path_buf);
        let map = match Map::load(&path)? {
            Some(m) => m,
            None if mapfile.is_none() => match crate::settings::store(root).load_map() {
                Ok(Some(text)) => {
                    let yaml = super::signed_map::open(root, &text)?;
                    Map::parse(&yaml).map_err(|detail| RelayError::Map {
                        path: "the shared store's map".into(),
                        detail,
                    })?
                }
                Ok(None) => return Ok(None),
                Err(e) => return Err(RelayError::Config(format!("the shared store's map: {e}"))),
            },
            None => {
                return Err(RelayError::Map {
                    path,
                    detail: "no such file".into(),
                })
            }
        };
        Self::new(&map, configured(root)?).map(Some)
    }

    /// Routes of `map` with the relays' addresses.
    pub fn new(map: &Map, relays: BTreeMap<String, RelayAddr>) -> Result<Self, RelayError> {
        let mut via: HashMap<String, (usize, Vec<String>)> = HashMap::new();
        let mut direct = std::collections::HashSet::new();
        for (name, below) in &map.0 {
            if below.0.is_empty() && !relays.contains_key(name) {
                direct.insert(name.clone());
                continue;
            }
            if !relays.contains_key(name) {
                return Err(RelayError::Config(format!(
                    "the map has relay {name}, and overlord.conf has no [relays] {name} = HOST:PORT"
                )));
            }
            let mut stack = vec![(below, 1usize, vec![name.clone()])];
            while let Some((node, depth, path)) = stack.pop() {
                for (m, sub) in &node.0 {
                    if sub.0.is_empty() {
                        let better = via.get(m).is_none_or(|(d, _)| depth < *d);
                        if better {
                            via.insert(m.clone(), (depth, path.clone()));
                        }
                    } else {
                        let mut deeper = path.clone();
                        deeper.push(m.clone());
                        stack.push((sub, depth + 1, deeper));
                    }
                }
            }
        }
        // Func's shortest path: a minion also at the top is called directly.
        via.retain(|m, _| !direct.contains(m));
        Ok(Routes {
            path: via.into_iter().map(|(m, (_, path))| (m, path)).collect(),
            minions: map.minions(),
            relays,
        })
    }

    /// Every minion the map names.
    pub fn minions(&self) -> &[String] {
        &self.minions
    }

    /// The relay `host` is reached through, if any.
    pub fn relay_of(&self, host: &str) -> Option<&RelayAddr> {
        self.path.get(host).and_then(|p| self.relays.get(p.first()?))
    }

    /// The audience of a request for `hosts`: every relay on their paths →
    /// the hosts it calls itself (the last hop of a path calls the host;
    /// the others only hand the request on).
    pub fn callers(&self, hosts: &[String]) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for h in hosts {
            let Some(path) = self.path.get(h) else { continue };
            for (i, relay) in path.iter().enumerate() {
                let calls = out.entry(relay.clone()).or_default();
                if i + 1 == path.len() {
                    calls.push(h.clone());
                }
            }
        }
        out
    }

    /// A relay by name.
    pub fn relay(&self, name: &str) -> Option<&RelayAddr> {
        self.relays.get(name)
    }

    /// `hosts` split into those called directly and those of each relay.
    pub fn split(
        &self,
        hosts: impl IntoIterator<Item = String>,
    ) -> (Vec<String>, BTreeMap<String, Vec<String>>) {
        let mut direct = Vec::new();
        let mut relayed: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for h in hosts {
            match self.path.get(&h).and_then(|p| p.first()) {
                Some(r) => relayed.entry(r.clone()).or_default().push(h),
                None => direct.push(h),
            }
        }
        (direct, relayed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relays(names: &[&str]) -> BTreeMap<String, RelayAddr> {
        names
            .iter()
            .map(|n| {
                (
                    n.to_string(),
                    RelayAddr {
                        name: n.to_string(),
                        addr: "127.0.0.1:1".into(),
                    },
                )
            })
            .collect()
    }

    #[test]
    fn funcs_nesting_routes_by_the_first_hop_of_the_shortest_path() {
        let map =
            Map::parse("relay1: {web1: {}, relay2: {db1: {}, web2: {}}}\nmail1: {}\nweb2: {}\n").unwrap();
        let routes = Routes::new(&map, relays(&["relay1"])).unwrap();
        assert_eq!(routes.minions(), ["db1", "mail1", "web1", "web2"]);
        let (direct, via) = routes.split(["web1", "db1", "web2", "mail1", "other"].map(String::from));
        assert_eq!(direct, ["web2", "mail1", "other"]);
        assert_eq!(via["relay1"], ["web1", "db1"]);
        // The audience: who calls each host itself.
        let callers = routes.callers(&["web1".into(), "db1".into()]);
        assert_eq!(callers["relay1"], ["web1"]);
        assert_eq!(callers["relay2"], ["db1"]);
        let callers = routes.callers(&["db1".into()]);
        assert!(
            callers["relay1"].is_empty(),
            "relay1 only hands it on: {callers:?}"
        );
        assert_eq!(Map::parse(&map.to_yaml()).unwrap(), map);
    }

    /// A lying relay's map claiming another segment's minion (issue 46):
    /// written without a word before, and the top then sent that minion's
    /// calls to the liar.
    #[test]
    fn a_host_claimed_twice_is_refused_and_named() {
        let mut map = Map::parse(
            "d1: {}\nrelay1: {r1a: {}, d1: {}, r2a: {}}\nrelay2: {r2a: {}, r2b: {}}\nrelay3: {r3a: {}, r3b: {deep: {r3a: {}}}}\n",
        )
        .unwrap();
        let refused = map.refuse_double_claims();
        assert_eq!(refused.len(), 3, "{refused:?}");
        assert!(
            refused[0].starts_with("d1 is claimed by this overlord and relay relay1"),
            "{refused:?}"
        );
        assert!(
            refused[1].starts_with("r2a is claimed by relay relay1 and relay relay2"),
            "{refused:?}"
        );
        assert!(
            refused[2].starts_with("r3a is claimed by relay relay3 and relay relay3/r3b"),
            "{refused:?}"
        );
        assert_eq!(
            map,
            // relay3's nested relays held nothing else: emptied, they go.
            Map::parse("d1: {}\nrelay1: {r1a: {}}\nrelay2: {r2b: {}}\n").unwrap()
        );
    }

    #[test]
    fn a_relay_without_an_address_and_bad_names_are_refused() {
        let map = Map::parse("relay9: {web1: {}}\n").unwrap();
        assert!(Routes::new(&map, relays(&[]))
            .unwrap_err()
            .to_string()
            .contains("[relays] relay9"));
        assert!(Map::parse("'bad name': {}\n").is_err());
        let mut deep = "x: {}".to_string();
        for i in 0..20 {
            deep = format!("r{i}: {{{deep}}}");
        }
        assert!(Map::parse(&deep).unwrap_err().contains("deeper"));
    }
}
