//! Choosing the device `auto` opens: by speed, not by label. A software adapter (lavapipe,
//! SwiftShader: `isFallbackAdapter` in browsers) is a GPU by API but runs compute far slower
//! than the CPU backend, so the policy's [`Selection`] ranks by what each device is and, for
//! `"auto"` without a hardware GPU, times the catalogue's heavy ops on every candidate.

use std::collections::BTreeMap;

use super::times_text;
use crate::base::policy::Selection;
use crate::hal::Candidate;
use crate::profile::Decision;
use crate::runtime::tune_cache::{Entry, TuneCache};
use crate::{Device, DeviceInfo, DeviceOptions, DeviceType, Error, Policy, Queue, Result};

/// Timed runs of the probe after one warm-up; their median counts.
const PROBE_REPS: usize = 3;

/// The work `auto` times on each candidate device when there is no hardware GPU (the ops
/// give it: heavy ops of the catalogue).
pub(crate) struct Probe {
    /// What it runs, for reasons and the cache.
    pub describe: fn() -> String,
    /// Make its inputs on a device and return what records it on a queue.
    pub setup: fn(&Device) -> Result<Recording>,
}

/// Records work on a queue.
pub(crate) type Recording = Box<dyn Fn(&Queue) -> Result<()>>;

/// Whether a device is a real GPU (not the CPU, not a GPU API implemented on the CPU).
fn is_hardware_gpu(info: &DeviceInfo) -> bool {
    !matches!(info.device_type, DeviceType::Cpu | DeviceType::SoftwareGpu)
}

/// `webgpu `llvmpipe` (SoftwareGpu)`
fn label(info: &DeviceInfo) -> String {
    format!("{} `{}` ({})", info.backend, info.name, info.device_type)
}

/// Open the device `policy` prefers among `candidates`, with `options`, and say why.
pub(crate) async fn open_best(
    policy: &Policy,
    candidates: Vec<Candidate>,
    options: DeviceOptions,
    probe: &Probe,
) -> Result<(Device, Decision)> {
    let best = best_per_backend(policy, candidates)?;
    if policy.selection == Selection::Auto
        && best.len() > 1
        && !best.iter().any(|c| is_hardware_gpu(&c.info))
    {
        return measure(policy, best, options, probe).await;
    }
    let (chosen, decision) = choose_unmeasured(policy, best);
    Ok((
        Device::from_candidate(chosen, options, policy.clone()).await?,
        decision,
    ))
}

/// The best device of each backend the policy allows, in the policy's order; an error when
/// there is none.
fn best_per_backend(policy: &Policy, candidates: Vec<Candidate>) -> Result<Vec<Candidate>> {
    let rank = |c: &Candidate| policy.backends.iter().position(|&b| b == c.info.backend);
    let mut best: Vec<Candidate> = Vec::new();
    let mut sorted: Vec<(usize, Candidate)> = candidates
        .into_iter()
        .filter_map(|c| rank(&c).map(|r| (r, c)))
        .collect();
    sorted.sort_by_key(|(r, c)| (*r, c.info.device_type.preference(), c.info.index));
    for (_, c) in sorted {
        if !best.iter().any(|b| b.info.backend == c.info.backend) {
            best.push(c);
        }
    }
    if best.is_empty() {
        let reasons: Vec<String> = policy
            .backends
            .iter()
            .map(|&k| format!("{k}: {}", crate::hal::missing_reason(k)))
            .collect();
        return Err(Error::NoDevice(format!(
            "none of the policy's backends has a device ({})",
            reasons.join("; ")
        )));
    }
    Ok(best)
}

/// The backend decision that picks `c` for `reason`.
fn decide(c: &Candidate, reason: String) -> Decision {
    Decision {
        op: "backend".into(),
        choice: label(&c.info),
        reason,
        times_us: BTreeMap::new(),
    }
}

/// Pick among `best` (not empty) without timing anything: every case of [`open_best`] but
/// `"auto"` among several devices none of which is a hardware GPU.
fn choose_unmeasured(policy: &Policy, mut best: Vec<Candidate>) -> (Candidate, Decision) {
    let hardware = best.iter().position(|c| is_hardware_gpu(&c.info));
    match policy.selection {
        Selection::Order => {
            let c = best.remove(0);
            let d = decide(
                &c,
                format!(
                    "first of the policy's backends {:?} with a device (selection \"order\")",
                    names(policy)
                ),
            );
            (c, d)
        }
        _ if best.len() == 1 => {
            let c = best.remove(0);
            let others: Vec<String> = policy
                .backends
                .iter()
                .filter(|&&k| k != c.info.backend)
                .map(|&k| format!("{k}: {}", crate::hal::missing_reason(k)))
                .collect();
            let why = if others.is_empty() {
                String::new()
            } else {
                format!(" (no device from {})", others.join("; "))
            };
            let d = decide(
                &c,
                format!("the only device the policy's backends offer{why}"),
            );
            (c, d)
        }
        _ if hardware.is_some() => {
            let c = best.remove(hardware.unwrap_or(0));
            let d = decide(
                &c,
                format!(
                    "a hardware GPU, first in the policy's order {:?}",
                    names(policy)
                ),
            );
            (c, d)
        }
        _ => {
            // Selection::Ranked (Auto measures instead): the CPU ranks above software adapters.
            let i = best
                .iter()
                .position(|c| c.info.device_type == DeviceType::Cpu)
                .unwrap_or(0);
            let others: Vec<String> = best
                .iter()
                .filter(|c| c.info.device_type == DeviceType::SoftwareGpu)
                .map(|c| label(&c.info))
                .collect();
            let c = best.remove(i);
            let d = decide(
                &c,
                format!(
                    concat!(
                        "no hardware GPU; software adapters ({}) run compute far slower than ",
                        "the CPU backend (selection \"ranked\")"
                    ),
                    others.join(", ")
                ),
            );
            (c, d)
        }
    }
}

fn names(policy: &Policy) -> Vec<&'static str> {
    policy.backends.iter().map(|b| b.name()).collect()
}

/// Time the probe on every candidate (or take the times from the tune cache) and open the fastest.
async fn measure(
    policy: &Policy,
    candidates: Vec<Candidate>,
    options: DeviceOptions,
    probe: &Probe,
) -> Result<(Device, Decision)> {
    let cache = TuneCache::for_policy(policy);
    let mut ids: Vec<String> = candidates.iter().map(|c| identity(&c.info)).collect();
    ids.sort();
    let key = format!("select | {}", ids.join(" ; "));
    let probe_text = (probe.describe)();
    let candidates = match cached_choice(&cache, &key, &probe_text, candidates)? {
        Ok((chosen, decision)) => {
            return Ok((
                Device::from_candidate(chosen, options, policy.clone()).await?,
                decision,
            ))
        }
        Err(candidates) => candidates,
    };
    let (best, times_us, failures) = time_candidates(policy, candidates, options, probe).await;
    let Some((_, device, info)) = best else {
        return Err(Error::NoDevice(format!(
            "no candidate device ran the probe: {}",
            failures.join("; ")
        )));
    };
    cache.put(
        key,
        Entry {
            choice: identity(&info),
            times_us: times_us.clone(),
            default: String::new(),
            problem: probe_text.clone(),
        },
    );
    let mut reason = format!(
        "no hardware GPU; fastest on the probe ({probe_text}): {} (measured now, saved to {})",
        times_text(&times_us),
        cache.describe()
    );
    if !failures.is_empty() {
        reason.push_str(&format!("; could not run: {}", failures.join("; ")));
    }
    Ok((
        device,
        Decision {
            op: "backend".into(),
            choice: label(&info),
            reason,
            times_us,
        },
    ))
}

/// The candidate the tune cache names under `key`, with its decision; `Err(candidates)`
/// (given back untouched) when the cache names none of them.
fn cached_choice(
    cache: &TuneCache,
    key: &str,
    probe_text: &str,
    candidates: Vec<Candidate>,
) -> Result<std::result::Result<(Candidate, Decision), Vec<Candidate>>> {
    let Some(entry) = cache.get(key) else {
        return Ok(Err(candidates));
    };
    let Some(c) = candidates
        .iter()
        .position(|c| identity(&c.info) == entry.choice)
    else {
        return Ok(Err(candidates));
    };
    let chosen = candidates
        .into_iter()
        .nth(c)
        .ok_or_else(|| Error::Internal("lost a candidate".into()))?;
    let reason = format!(
        concat!(
            "no hardware GPU; fastest on the probe ({}): {} ",
            "(measured earlier, from the tune cache {})"
        ),
        probe_text,
        times_text(&entry.times_us),
        cache.describe()
    );
    let decision = Decision {
        op: "backend".into(),
        choice: label(&chosen.info),
        reason,
        times_us: entry.times_us,
    };
    Ok(Ok((chosen, decision)))
}

/// The fastest device on the probe (its time, the device opened, its info), every
/// candidate's time by identity, and the candidates that failed to open or run it.
async fn time_candidates(
    policy: &Policy,
    candidates: Vec<Candidate>,
    options: DeviceOptions,
    probe: &Probe,
) -> (
    Option<(f64, Device, DeviceInfo)>,
    BTreeMap<String, f64>,
    Vec<String>,
) {
    let mut best: Option<(f64, Device, DeviceInfo)> = None;
    let mut times_us = BTreeMap::new();
    let mut failures = Vec::new();
    for c in candidates {
        let info = c.info.clone();
        let timed = match Device::from_candidate(c, options, policy.clone()).await {
            Ok(device) => time_probe(&device, probe).await.map(|t| (t, device)),
            Err(e) => Err(e),
        };
        match timed {
            Ok((t, device)) => {
                times_us.insert(identity(&info), t);
                if best.as_ref().is_none_or(|(bt, _, _)| t < *bt) {
                    best = Some((t, device, info));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", label(&info))),
        }
    }
    (best, times_us, failures)
}

/// A device's identity in the cache: backend, name, type and driver.
fn identity(info: &DeviceInfo) -> String {
    format!(
        "{} {} ({}, {})",
        info.backend, info.name, info.device_type, info.driver
    )
}

/// Median host time in microseconds to run the probe to completion (what a caller waits).
async fn time_probe(device: &Device, probe: &Probe) -> Result<f64> {
    let record = (probe.setup)(device)?;
    let queue = device.new_queue();
    let run = || record(&queue);
    run()?;
    queue.submit()?.wait().await?;
    let mut samples = Vec::with_capacity(PROBE_REPS);
    for _ in 0..PROBE_REPS {
        let start = web_time::Instant::now();
        run()?;
        queue.submit()?.wait().await?;
        samples.push(start.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}
