//! A graph checked and ready to run: its schedule, the operator of each step, its constants,
//! and the plans of the subgraphs its nodes hold (the branches of `If`, the body of `Loop`).
//! A run reads the values of enclosing graphs by name through a chain of scopes.

use super::attr::Attr;
use super::graph::{Graph, Origin, ValueId};
use super::ops::{self, Ctx, OpDef};
use super::schedule::{reads, schedule, Schedule};
use super::value::Val;
use crate::base::error::{Error, Result};
use crate::{Device, Queue};

/// A graph's run: schedule, operators, constants and subgraph plans.
pub(crate) struct Plan {
    /// The run order and last uses.
    schedule: Schedule,
    /// One per scheduled node, in schedule order.
    steps: Vec<Step>,
    /// The value of each constant, on the device or (small integers) the host.
    constants: Vec<Option<Val>>,
}

/// One scheduled node: its operator and the plans of its GRAPH attributes.
struct Step {
    op: &'static OpDef,
    bodies: Vec<(String, Plan)>,
}

/// What every step of a run shares: the device, the queue and the model's opset.
#[derive(Clone, Copy)]
pub(crate) struct Exec<'a> {
    /// The session's device.
    pub device: &'a Device,
    /// The queue the run records on.
    pub queue: &'a Queue,
    /// The default domain's opset version the model imports.
    pub opset: i64,
}

/// The values of a running graph, and the scopes of the graphs around it: how a subgraph
/// finds the values it names from outside.
pub(crate) struct Scope<'a> {
    graph: &'a Graph,
    env: &'a [Option<Val>],
    outer: Option<&'a Scope<'a>>,
}

impl Scope<'_> {
    /// The value called `name` here or in an enclosing scope.
    fn find(&self, name: &str) -> Option<&Val> {
        let here = self.graph.find(name).and_then(|id| self.env[id].as_ref());
        here.or_else(|| self.outer.and_then(|o| o.find(name)))
    }
}

impl Plan {
    /// The plan of `g`. Every node it cannot run goes to `missing`, named with `path` (the
    /// nodes and attributes that hold `g`, empty for the main graph); where any is missing
    /// the plan must not run, and its constants are not uploaded.
    pub(crate) fn new(
        g: &Graph,
        device: &Device,
        opset: i64,
        path: &str,
        missing: &mut Vec<String>,
    ) -> Result<Plan> {
        let schedule = schedule(g)?;
        let mut steps = Vec::with_capacity(schedule.order.len());
        for &n in &schedule.order {
            let node = &g.nodes[n];
            let label = format!("{path}{}", node.label());
            let Some(op) = ops::find(&node.domain, &node.op) else {
                let domain = match node.domain.as_str() {
                    "" => "ai.onnx",
                    d => d,
                };
                missing.push(format!("{label} of domain {domain} (opset {opset})"));
                continue;
            };
            if let Some(why) = op.check(node, &schedule.used) {
                missing.push(format!("{label}: {why}"));
            }
            let mut bodies = Vec::new();
            for (name, a) in node.attrs.iter() {
                if let Attr::Graph(body) = a {
                    let inner = format!("{label} › {name} › ");
                    let plan = Plan::new(body, device, opset, &inner, missing)?;
                    bodies.push((name.to_string(), plan));
                }
            }
            steps.push(Step { op, bodies });
        }
        let constants = if missing.is_empty() {
            g.values
                .iter()
                .map(|v| match &v.origin {
                    Origin::Constant(c) => Val::from_constant(c, device).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        Ok(Plan {
            schedule,
            steps,
            constants,
        })
    }

    /// A fresh environment of `g`'s values: its constants set, the rest empty.
    pub(crate) fn env(&self) -> Vec<Option<Val>> {
        self.constants.clone()
    }

    /// Runs `g` (the graph the plan was made for) in `env`, whose inputs the caller has set;
    /// values `g` names from outside come from `outer`. Gives the graph's outputs in order.
    pub(crate) fn run(
        &self,
        g: &Graph,
        x: Exec<'_>,
        mut env: Vec<Option<Val>>,
        outer: Option<&Scope<'_>>,
    ) -> Result<Vec<Val>> {
        for (id, v) in g.values.iter().enumerate() {
            if v.origin == Origin::Outer {
                let found = outer.and_then(|o| o.find(&v.name)).cloned();
                env[id] = Some(found.ok_or_else(|| {
                    Error::Internal(format!("the enclosing graphs hold no value '{}'", v.name))
                })?);
            }
        }
        for (step, (&n, s)) in self.schedule.order.iter().zip(&self.steps).enumerate() {
            let outputs = {
                let scope = Scope {
                    graph: g,
                    env: &env,
                    outer,
                };
                self.step(g, x, &scope, n, s)?
            };
            for (id, v) in outputs {
                env[id] = Some(v);
            }
            for v in reads(g, &g.nodes[n]) {
                if self.schedule.last_use[v] == Some(step) {
                    env[v] = None;
                }
            }
        }
        g.outputs
            .iter()
            .map(|&id| {
                env[id].clone().ok_or_else(|| {
                    let name = &g.values[id].name;
                    Error::Internal(format!("output '{name}' was not computed"))
                })
            })
            .collect()
    }

    /// Runs node `n` with step `s`, giving the values it writes by id.
    fn step(
        &self,
        g: &Graph,
        x: Exec<'_>,
        scope: &Scope<'_>,
        n: usize,
        s: &Step,
    ) -> Result<Vec<(ValueId, Val)>> {
        let node = &g.nodes[n];
        let inputs: Vec<Option<Val>> = node
            .inputs
            .iter()
            .map(|v| v.and_then(|id| scope.env[id].clone()))
            .collect();
        let cx = Ctx {
            device: x.device,
            queue: x.queue,
            opset: x.opset,
            node,
            inputs: &inputs,
            bodies: &s.bodies,
            scope,
        };
        let mut outputs = (s.op.run)(&cx)?.into_iter();
        let mut written = Vec::new();
        for (slot, id) in node.outputs.iter().enumerate() {
            let v = outputs.next();
            let Some(id) = *id else { continue };
            if slot >= s.op.outputs {
                // Not computed, and unused (checked at load).
                continue;
            }
            let v = v.ok_or_else(|| {
                Error::Internal(format!("{} gave no output {slot}", node.label()))
            })?;
            written.push((id, v));
        }
        Ok(written)
    }
}

/// Runs subgraph `g` with plan `plan` for a control-flow node: `inputs` are the subgraph's
/// inputs in order, `scope` the running graph around it.
pub(crate) fn run_body(
    plan: &Plan,
    g: &Graph,
    x: Exec<'_>,
    scope: &Scope<'_>,
    inputs: Vec<Val>,
) -> Result<Vec<Val>> {
    if inputs.len() != g.inputs.len() {
        return Err(Error::Model(format!(
            "the subgraph takes {} inputs; it was given {}",
            g.inputs.len(),
            inputs.len()
        )));
    }
    let mut env = plan.env();
    for (&id, v) in g.inputs.iter().zip(inputs) {
        env[id] = Some(v);
    }
    plan.run(g, x, env, Some(scope))
}
