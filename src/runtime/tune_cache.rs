//! Where autotuning and backend-selection results are kept between runs: a JSON file natively
//! (written atomically, merged with what other processes wrote), `localStorage` in browser
//! pages, memory elsewhere.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::base::signal::lock;
use crate::Policy;

/// Environment variable naming the tune cache file (a policy's `tune_cache` wins over it).
pub const TUNE_CACHE_ENV: &str = "UNICOMPUTE_TUNE_CACHE";
/// Version of the file layout; a file of another version is ignored (and rewritten).
const VERSION: u32 = 1;
/// `localStorage` key in browsers.
#[cfg(target_arch = "wasm32")]
const STORAGE_KEY: &str = "unicompute.tune";

/// One measured choice: the candidates' times and the winner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The winner (a variant, or a device for backend selection).
    pub choice: String,
    /// Median time of each candidate in microseconds.
    pub times_us: BTreeMap<String, f64>,
    /// What ran without tuning (the backend's default variant), for comparison.
    pub default: String,
    /// The problem that was timed (the first of its shape class).
    pub problem: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    /// `device key | problem class` -> entry.
    entries: BTreeMap<String, Entry>,
}

/// Where the entries persist.
#[derive(Debug, Clone, PartialEq)]
enum Location {
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    File(std::path::PathBuf),
    #[cfg(target_arch = "wasm32")]
    BrowserStorage,
    Memory,
}

/// The tune cache of one device.
pub(crate) struct TuneCache {
    location: Location,
    /// Entries read so far (loaded from the location on first use).
    entries: Mutex<Option<BTreeMap<String, Entry>>>,
}

impl TuneCache {
    /// The cache `policy` names, else `$UNICOMPUTE_TUNE_CACHE`, else the per-user default.
    pub(crate) fn for_policy(policy: &Policy) -> TuneCache {
        TuneCache {
            location: location(policy),
            entries: Mutex::new(None),
        }
    }

    /// Where the cache lives, in words (`/home/u/.cache/unicompute/tune.json`, `localStorage`).
    pub(crate) fn describe(&self) -> String {
        match &self.location {
            Location::File(p) => p.display().to_string(),
            #[cfg(target_arch = "wasm32")]
            Location::BrowserStorage => format!("localStorage[{STORAGE_KEY}]"),
            Location::Memory => "memory".into(),
        }
    }

    /// The entry for `key`, if one was stored (here or, for files, by an earlier run).
    pub(crate) fn get(&self, key: &str) -> Option<Entry> {
        let mut entries = lock(&self.entries);
        entries.get_or_insert_with(|| self.read()).get(key).cloned()
    }

    /// Store `entry` under `key` and persist it. A cache that cannot be written is logged,
    /// not fatal: the entry still serves this process.
    pub(crate) fn put(&self, key: String, entry: Entry) {
        let mut entries = lock(&self.entries);
        // Merge with what other processes wrote since this one read the file.
        let mut merged = self.read();
        merged.insert(key.clone(), entry.clone());
        if let Err(e) = self.write(&merged) {
            tracing::warn!(
                target: "unicompute::choice",
                cache = %self.describe(),
                error = %e,
                "the tune cache could not be written"
            );
        }
        entries.get_or_insert_with(BTreeMap::new).extend(merged);
    }

    /// Every entry, as JSON (what the file holds).
    pub(crate) fn to_json(&self) -> String {
        let mut entries = lock(&self.entries);
        let entries = entries.get_or_insert_with(|| self.read()).clone();
        serde_json::to_string_pretty(&CacheFile {
            version: VERSION,
            entries,
        })
        .unwrap_or_default()
    }

    /// Add the entries of a JSON document made by [`to_json`](TuneCache::to_json).
    pub(crate) fn import_json(&self, text: &str) -> crate::Result<()> {
        let file: CacheFile = serde_json::from_str(text)
            .map_err(|e| crate::Error::Invalid(format!("tune cache: {e}")))?;
        if file.version != VERSION {
            return Err(crate::Error::Invalid(format!(
                "tune cache: version {} is not {VERSION}, the version this build reads",
                file.version
            )));
        }
        for (k, v) in file.entries {
            self.put(k, v);
        }
        Ok(())
    }

    fn read(&self) -> BTreeMap<String, Entry> {
        let text = match &self.location {
            Location::File(p) => std::fs::read_to_string(p).ok(),
            #[cfg(target_arch = "wasm32")]
            Location::BrowserStorage => {
                browser_storage().and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
            }
            Location::Memory => None,
        };
        text.and_then(|t| serde_json::from_str::<CacheFile>(&t).ok())
            .filter(|f| f.version == VERSION)
            .map(|f| f.entries)
            .unwrap_or_default()
    }

    fn write(&self, entries: &BTreeMap<String, Entry>) -> std::result::Result<(), String> {
        let text = serde_json::to_string_pretty(&CacheFile {
            version: VERSION,
            entries: entries.clone(),
        })
        .map_err(|e| e.to_string())?;
        match &self.location {
            Location::File(path) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| format!("creating {}: {e}", dir.display()))?;
                }
                // Unique per process and write, so concurrent writers never share a temporary file.
                let tmp = path.with_extension(format!(
                    "tmp{}-{}",
                    std::process::id(),
                    crate::base::id::next_id()
                ));
                std::fs::write(&tmp, text)
                    .map_err(|e| format!("writing {}: {e}", tmp.display()))?;
                std::fs::rename(&tmp, path)
                    .map_err(|e| format!("renaming to {}: {e}", path.display()))
            }
            #[cfg(target_arch = "wasm32")]
            Location::BrowserStorage => browser_storage()
                .ok_or("no localStorage")?
                .set_item(STORAGE_KEY, &text)
                .map_err(|e| format!("{e:?}")),
            Location::Memory => Ok(()),
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn location(policy: &Policy) -> Location {
    let named = policy.tune_cache.clone().or_else(|| {
        std::env::var(TUNE_CACHE_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
    });
    match named {
        Some(path) => Location::File(path.into()),
        None => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(home) => {
                Location::File(std::path::Path::new(&home).join(".cache/unicompute/tune.json"))
            }
            None => Location::Memory,
        },
    }
}

#[cfg(target_arch = "wasm32")]
fn location(_policy: &Policy) -> Location {
    if browser_storage().is_some() {
        Location::BrowserStorage
    } else {
        Location::Memory
    }
}

/// The page's `localStorage` (workers and Node have none).
#[cfg(target_arch = "wasm32")]
fn browser_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}
