//! Func's groups file (`etc/func/groups`, INI): `[group]` sections with
//! `host = a, b, c`. Read for `@group` targeting; changed by `func ... group`.

use std::collections::BTreeMap;
use std::path::Path;

use common::config::Ini;

/// Group name → member patterns, in file order per group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Groups {
    groups: BTreeMap<String, Vec<String>>,
}

impl Groups {
    /// Reads the file; a missing or unreadable file means no groups (a
    /// malformed one is reported and treated as empty).
    pub fn load(path: &Path) -> Self {
        match Ini::load(path) {
            Ok(ini) => Self::from_ini(&ini),
            Err(e) => {
                crate::log::line(&format!("warning: ignoring groups file: {e}"));
                Self::default()
            }
        }
    }

    pub fn parse(text: &str) -> Self {
        Ini::parse(Path::new("groups"), text)
            .map(|ini| Self::from_ini(&ini))
            .unwrap_or_default()
    }

    fn from_ini(ini: &Ini) -> Self {
        let groups = ini
            .sections()
            .map(|name| (name.to_string(), ini.list(name, "host")))
            .collect();
        Self { groups }
    }

    /// Members of `group`.
    pub fn hosts(&self, group: &str) -> Option<Vec<String>> {
        self.groups.get(group).cloned()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.groups.keys().map(String::as_str)
    }

    /// Adds a group; false if it exists.
    pub fn add_group(&mut self, group: &str) -> bool {
        if self.groups.contains_key(group) {
            return false;
        }
        self.groups.insert(group.to_string(), Vec::new());
        true
    }

    pub fn remove_group(&mut self, group: &str) -> bool {
        self.groups.remove(group).is_some()
    }

    /// Adds hosts to a group (created if needed); returns how many were new.
    pub fn add_hosts(&mut self, group: &str, hosts: &[String]) -> usize {
        let members = self.groups.entry(group.to_string()).or_default();
        let mut added = 0;
        for h in hosts {
            if !members.contains(h) {
                members.push(h.clone());
                added += 1;
            }
        }
        added
    }

    /// Removes hosts from a group; returns how many were removed.
    pub fn remove_hosts(&mut self, group: &str, hosts: &[String]) -> usize {
        let Some(members) = self.groups.get_mut(group) else {
            return 0;
        };
        let before = members.len();
        members.retain(|m| !hosts.contains(m));
        before - members.len()
    }

    /// The file's text.
    pub fn render(&self) -> String {
        self.groups
            .iter()
            .map(|(g, hosts)| format!("[{g}]\nhost = {}\n\n", hosts.join(", ")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_and_render_round_trip() {
        let mut g = Groups::parse("[web]\nhost = web1,web2\n");
        assert!(g.add_group("db") && !g.add_group("db"));
        assert_eq!(g.add_hosts("db", &["db1".into(), "db2".into(), "db1".into()]), 2);
        assert_eq!(g.remove_hosts("web", &["web2".into()]), 1);
        let again = Groups::parse(&g.render());
        assert_eq!(again, g);
        assert_eq!(again.hosts("db").unwrap(), ["db1", "db2"]);
        assert!(g.remove_group("web") && g.hosts("web").is_none());
    }
}
