//! naga statements as C++ statements. A WGSL `loop` is `for (;;)` with its `continuing`
//! block after a label that `continue` jumps to (so `continue` runs it, as in WGSL); the
//! body's values that `continuing` uses are declared before the body (`hoist.rs`).

use std::fmt::Write;

use naga::{AtomicFunction as A, Block, Statement as S, SwitchValue};

use super::Function;

impl Function<'_> {
    /// Append `block` to the body, indented by `depth`; `at` follows the statement being
    /// written, so that an error can say where.
    pub(super) fn block(&mut self, block: &Block, depth: usize) -> Result<(), String> {
        for (statement, span) in block.span_iter() {
            self.at = *span;
            self.statement(statement, depth)?;
        }
        Ok(())
    }

    /// One line of C++, after a `#line` directive naming the WGSL statement it comes from.
    fn line(&mut self, depth: usize, text: &str) {
        if self.at != naga::Span::default() {
            let at = self.at.location(self.source);
            let _ = writeln!(
                self.out,
                "#line {} \"wgsl@{}\"",
                at.line_number, at.line_position
            );
        }
        let _ = writeln!(self.out, "{:width$}{text}", "", width = 4 * depth);
    }

    fn statement(&mut self, s: &S, depth: usize) -> Result<(), String> {
        match *s {
            S::Emit(ref range) => {
                for h in range.clone() {
                    self.at = self.function.expressions.get_span(h);
                    let definition = self.define(h)?;
                    self.line(depth, &format!("const auto e{} = {definition};", h.index()));
                    self.emitted.insert(h);
                }
            }
            S::Block(ref b) => self.nested(depth, "", b)?,
            S::If {
                condition,
                ref accept,
                ref reject,
            } => {
                let condition = self.expr(condition)?;
                self.nested(depth, &format!("if ({condition}) "), accept)?;
                self.nested(depth, "else ", reject)?;
            }
            S::Switch {
                selector,
                ref cases,
            } => self.switch(selector, cases, depth)?,
            S::Loop {
                ref body,
                ref continuing,
                break_if,
            } => self.looped(body, continuing, break_if, depth)?,
            S::Break => self.line(depth, "break;"),
            S::Continue => {
                let label = *self.loops.last().ok_or("continue outside a loop")?;
                self.line(depth, &format!("goto continuing{label};"));
            }
            S::Return { value: Some(v) } => {
                let v = self.expr(v)?;
                self.line(depth, &format!("return {v};"));
            }
            S::Return { value: None } => self.line(depth, "return;"),
            S::ControlBarrier(_) => self.line(depth, "__syncthreads();"),
            S::MemoryBarrier(b) if b.contains(naga::Barrier::STORAGE) => {
                self.line(depth, "__threadfence();")
            }
            S::MemoryBarrier(_) => self.line(depth, "__threadfence_block();"),
            _ => self.access_statement(s, depth)?,
        }
        Ok(())
    }

    /// The statements of [`statement`](Self::statement) that store, call, or produce a
    /// result: stores, calls, atomics, uniform loads and subgroup operations.
    fn access_statement(&mut self, s: &S, depth: usize) -> Result<(), String> {
        match *s {
            S::Store { pointer, value } => {
                let (p, v) = (self.expr(pointer)?, self.expr(value)?);
                let text = if self.points_at_atomic(pointer) {
                    format!("atomic_store({p}, {v});")
                } else {
                    format!("*{p} = {v};")
                };
                self.line(depth, &text);
            }
            S::Call {
                function,
                ref arguments,
                result,
            } => {
                let args = arguments
                    .iter()
                    .map(|&a| self.expr(a))
                    .collect::<Result<Vec<_>, _>>()?;
                let call = format!("f{}({})", function.index(), args.join(", "));
                self.result(depth, result, &call);
            }
            S::Atomic {
                pointer,
                ref fun,
                value,
                result,
            } => self.atomic(pointer, fun, value, result, depth)?,
            S::WorkGroupUniformLoad { pointer, result } => {
                let p = self.expr(pointer)?;
                self.line(depth, "__syncthreads();");
                self.result(depth, Some(result), &format!("*{p}"));
                self.line(depth, "__syncthreads();");
            }
            S::SubgroupBallot { result, predicate } => {
                let p = predicate.map_or(Ok("true".to_string()), |p| self.expr(p))?;
                self.result(depth, Some(result), &format!("sg_ballot({p})"));
            }
            S::SubgroupCollectiveOperation {
                op,
                collective_op,
                argument,
                result,
            } => {
                let call = self.collective(op, collective_op, argument)?;
                self.result(depth, Some(result), &call);
            }
            S::SubgroupGather {
                ref mode,
                argument,
                result,
            } => {
                let call = self.gathered(mode, argument)?;
                self.result(depth, Some(result), &call);
            }
            ref other => return Err(format!("the statement {other:?}")),
        }
        Ok(())
    }

    /// A subgroup reduction or scan of `argument` as a warp fold.
    fn collective(
        &self,
        op: naga::SubgroupOperation,
        collective: naga::CollectiveOperation,
        argument: naga::Handle<naga::Expression>,
    ) -> Result<String, String> {
        use naga::SubgroupOperation as O;
        let v = self.expr(argument)?;
        let f = match op {
            O::Add => "fold_add",
            O::Mul => "fold_mul",
            O::Min => "fold_min",
            O::Max => "fold_max",
            O::And | O::All => "fold_and",
            O::Or | O::Any => "fold_or",
            O::Xor => "fold_xor",
        };
        let identity = if op == O::Mul {
            format!("sg_one({v})")
        } else {
            format!("decltype({v}){{}}")
        };
        let (upto, exclusive) = match collective {
            naga::CollectiveOperation::Reduce => ("31u", false),
            naga::CollectiveOperation::InclusiveScan => ("lane_id()", false),
            naga::CollectiveOperation::ExclusiveScan => ("lane_id()", true),
        };
        Ok(format!(
            "sg_fold({v}, {f}{{}}, {upto}, {exclusive}, {identity})"
        ))
    }

    /// A subgroup gather of `argument` from the lane `mode` names.
    fn gathered(
        &self,
        mode: &naga::GatherMode,
        argument: naga::Handle<naga::Expression>,
    ) -> Result<String, String> {
        use naga::GatherMode as G;
        let v = self.expr(argument)?;
        let src = match *mode {
            G::BroadcastFirst => return Ok(format!("sg_broadcast_first({v})")),
            G::Broadcast(i) | G::Shuffle(i) => format!("(u32)({})", self.expr(i)?),
            G::ShuffleDown(d) => format!("(lane_id() + (u32)({}))", self.expr(d)?),
            G::ShuffleUp(d) => format!("(lane_id() - (u32)({}))", self.expr(d)?),
            G::ShuffleXor(m) => format!("(lane_id() ^ (u32)({}))", self.expr(m)?),
            G::QuadBroadcast(i) => format!("((lane_id() & ~3u) + ((u32)({}) & 3u))", self.expr(i)?),
            G::QuadSwap(dir) => format!("(lane_id() ^ {}u)", dir as u32 + 1),
        };
        Ok(format!("sg_gather({v}, {src})"))
    }

    /// `call;`, or its result named for the expressions that use it.
    fn result(&mut self, depth: usize, result: Option<naga::Handle<naga::Expression>>, call: &str) {
        match result {
            Some(r) => {
                self.line(depth, &format!("const auto e{} = {call};", r.index()));
                self.emitted.insert(r);
            }
            None => self.line(depth, &format!("{call};")),
        }
    }

    fn nested(&mut self, depth: usize, head: &str, block: &Block) -> Result<(), String> {
        self.line(depth, &format!("{head}{{"));
        self.block(block, depth + 1)?;
        self.line(depth, "}");
        Ok(())
    }

    fn switch(
        &mut self,
        selector: naga::Handle<naga::Expression>,
        cases: &[naga::SwitchCase],
        depth: usize,
    ) -> Result<(), String> {
        let selector = self.expr(selector)?;
        self.line(depth, &format!("switch ({selector}) {{"));
        for case in cases {
            let label = match case.value {
                SwitchValue::I32(v) => format!("case {v}:"),
                SwitchValue::U32(v) => format!("case {v}u:"),
                SwitchValue::Default => "default:".into(),
            };
            self.nested(depth, &format!("{label} "), &case.body)?;
            if !case.fall_through {
                self.line(depth + 1, "break;");
            }
        }
        self.line(depth, "}");
        Ok(())
    }

    fn looped(
        &mut self,
        body: &Block,
        continuing: &Block,
        break_if: Option<naga::Handle<naga::Expression>>,
        depth: usize,
    ) -> Result<(), String> {
        let label = self.next_loop;
        self.next_loop += 1;
        self.loops.push(label);
        self.line(depth, "for (;;) {");
        let body_start = self.out.len();
        self.nested(depth + 1, "", body)?;
        let body_end = self.out.len();
        self.line(depth + 1, &format!("continuing{label}:;"));
        self.line(depth + 1, "{");
        let continuing_start = self.out.len();
        self.block(continuing, depth + 2)?;
        if let Some(b) = break_if {
            let b = self.expr(b)?;
            self.line(depth + 2, &format!("if ({b}) break;"));
        }
        let continuing_end = self.out.len();
        self.line(depth + 1, "}");
        self.line(depth, "}");
        self.loops.pop();
        self.hoist(
            body,
            body_start..body_end,
            continuing_start..continuing_end,
            depth + 1,
        )
    }

    fn atomic(
        &mut self,
        pointer: naga::Handle<naga::Expression>,
        fun: &A,
        value: naga::Handle<naga::Expression>,
        result: Option<naga::Handle<naga::Expression>>,
        depth: usize,
    ) -> Result<(), String> {
        let (p, v) = (self.expr(pointer)?, self.expr(value)?);
        let call = match *fun {
            A::Add => format!("atomicAdd({p}, {v})"),
            A::Subtract => format!("atomicSub({p}, {v})"),
            A::And => format!("atomicAnd({p}, {v})"),
            A::ExclusiveOr => format!("atomicXor({p}, {v})"),
            A::InclusiveOr => format!("atomicOr({p}, {v})"),
            A::Min => format!("atomicMin({p}, {v})"),
            A::Max => format!("atomicMax({p}, {v})"),
            A::Exchange { compare: None } => format!("atomicExch({p}, {v})"),
            A::Exchange { compare: Some(c) } => {
                let c = self.expr(c)?;
                let ty = result
                    .and_then(|r| self.info[r].ty.handle())
                    .ok_or("a compare-exchange without its result type")?;
                let ty = super::types::name(self.module, ty)?;
                format!(
                    "([&] {{ const auto old = atomicCAS({p}, {c}, {v}); {ty} r{{}}; r.m0 = \
                    old; r.m1 = old == {c}; return r; }}())"
                )
            }
        };
        self.result(depth, result, &call);
        Ok(())
    }
}
