//! Execution policy: which backend `auto` prefers and how it chooses, which precision matmuls
//! may use, which kernel variant each op runs (or `"auto"`: autotuned), whether a request the
//! device cannot honour may fall back, where tuning results are kept, and how much memory the
//! pool keeps. A policy is plain data (serialisable to JSON, compared with `==`), so the same
//! policy on the same device makes the same decisions.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};
use crate::base::info::{BackendKind, MatmulPrecision};

/// Ops whose kernel variant a policy can name (see [`crate::Device::variants`]): the one list
/// of them. The chooser's `TunableOp` names its ops from it, and tests hold the ops'
/// `Tunable`s, the bench and the TypeScript `Policy` to it.
pub const TUNABLE_OPS: &[&str] = &["matmul", "reduce"];

/// How `auto` picks among the devices of the policy's backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Selection {
    /// A hardware GPU if there is one (first in `backends` order); otherwise time the heavy ops
    /// of the catalogue (matmul, conv2d) on every candidate, software adapters and the CPU, and
    /// take the fastest. Measurements are cached with the autotuning results.
    #[default]
    Auto,
    /// By what the devices are, without measuring: hardware GPUs in `backends` order, then the
    /// CPU, then software adapters (lavapipe, SwiftShader, WARP), which are far slower than the
    /// CPU backend at compute.
    Ranked,
    /// Strictly in `backends` order.
    Order,
}

/// The execution policy of a device. Every field has a default; a JSON document may give any
/// subset. Unknown keys and invalid values are errors that name the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Backends `auto` may choose, in order of preference (`"cuda"`, `"webgpu"`, `"cpu"`); a
    /// backend left out is never chosen.
    pub backends: Vec<BackendKind>,
    /// How the device is chosen among them: `"auto"` (measure where labels do not settle it),
    /// `"ranked"` or `"order"` (see [`Selection`]).
    pub selection: Selection,
    /// Lowest precision matmuls may compute in: `"f32"`, `"tf32"`, `"bf16"` or `"f16"`. Only
    /// `cuda` has the faster paths; elsewhere anything but f32 is an error unless `fallback`.
    pub precision: MatmulPrecision,
    /// Kernel variant per op (`{"matmul": "tile128x64", "reduce": "tree"}`); `"auto"` times
    /// the candidates once per device and shape class and keeps the fastest. An op not named
    /// runs the backend's default for its shape.
    pub variants: BTreeMap<String, String>,
    /// Whether a request the device cannot honour (a precision or a variant it lacks) falls back
    /// to the default, with a warning logged; otherwise opening the device is an error.
    pub fallback: bool,
    /// File of autotuning and backend-selection results (native). Default:
    /// `$UNICOMPUTE_TUNE_CACHE`, else `~/.cache/unicompute/tune.json`. In browsers the results
    /// stay in memory and in `localStorage` where the page has it.
    pub tune_cache: Option<String>,
    /// Memory pool settings.
    pub pool: PoolPolicy,
}

/// Memory pool settings of a [`Policy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PoolPolicy {
    /// Bytes of freed memory kept for reuse.
    pub cache_limit_bytes: u64,
}

impl Default for PoolPolicy {
    fn default() -> Self {
        PoolPolicy {
            cache_limit_bytes: 1 << 30,
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            backends: vec![BackendKind::Cuda, BackendKind::WebGpu, BackendKind::Cpu],
            selection: Selection::Auto,
            precision: MatmulPrecision::F32,
            variants: BTreeMap::new(),
            fallback: false,
            tune_cache: None,
            pool: PoolPolicy::default(),
        }
    }
}

impl Policy {
    /// Parse a JSON policy. Errors name the offending key and what was expected.
    pub fn from_json(text: &str) -> Result<Policy> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::Invalid(format!("policy: {e}")))?;
        // Each key alone first, so that an error names the key it is about.
        if let serde_json::Value::Object(keys) = &value {
            for (key, v) in keys {
                let alone =
                    serde_json::Value::Object([(key.clone(), v.clone())].into_iter().collect());
                serde_json::from_value::<Policy>(alone)
                    .map_err(|e| Error::Invalid(format!("policy: `{key}`: {e}")))?;
            }
        }
        let policy: Policy =
            serde_json::from_value(value).map_err(|e| Error::Invalid(format!("policy: {e}")))?;
        policy.validate()?;
        Ok(policy)
    }

    /// The policy as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Read a JSON policy file.
    pub fn load(path: impl AsRef<Path>) -> Result<Policy> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Invalid(format!("reading policy {}: {e}", path.display())))?;
        Self::from_json(&text).map_err(|e| match e {
            Error::Invalid(m) => Error::Invalid(format!("{m} (in {})", path.display())),
            other => other,
        })
    }

    /// Write the policy as JSON.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json())
            .map_err(|e| Error::Invalid(format!("writing policy {}: {e}", path.display())))
    }

    /// Error unless every key and value makes sense without a device.
    pub fn validate(&self) -> Result<()> {
        if self.backends.is_empty() {
            return Err(Error::Invalid(
                "policy: `backends` is empty: expected at least one of cuda, webgpu, cpu".into(),
            ));
        }
        for (i, b) in self.backends.iter().enumerate() {
            if self.backends[..i].contains(b) {
                return Err(Error::Invalid(format!(
                    "policy: `backends` names {b} twice: expected each backend at most once"
                )));
            }
        }
        for (op, variant) in &self.variants {
            if !TUNABLE_OPS.contains(&op.as_str()) {
                return Err(Error::Invalid(format!(
                    "policy: `variants.{op}` is not an op with \
                    kernel variants: expected one of {TUNABLE_OPS:?}"
                )));
            }
            if variant.trim().is_empty() {
                return Err(Error::Invalid(format!(
                    "policy: `variants.{op}` is empty: expected a variant name or \"auto\""
                )));
            }
        }
        if self
            .tune_cache
            .as_deref()
            .is_some_and(|p| p.trim().is_empty())
        {
            return Err(Error::Invalid(
                "policy: `tune_cache` is empty: expected a file path (or leave the key out)".into(),
            ));
        }
        Ok(())
    }

    /// The variant the policy names for `op` (possibly `"auto"`), if any.
    pub fn variant(&self, op: &str) -> Option<&str> {
        self.variants.get(op).map(String::as_str)
    }
}
