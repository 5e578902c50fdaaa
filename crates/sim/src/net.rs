//! Delivering what an actor does: running an actor call and applying its commands
//! (sends, timers, records), and the simulated network (delay, jitter, FIFO links,
//! faults on the wire).

use super::*;

impl<P: Protocol> Sim<'_, P> {
    /// Runs one actor call at `self.now` and applies its effects.
    pub(crate) fn dispatch(&mut self, node: NodeId, hops: u32, f: impl FnOnce(Either<'_, P>, &mut Ctx<'_, P::Msg>)) {
        let ni = node.0 as usize;
        let server = self.is_server(node);
        let mut out = std::mem::take(&mut self.out);
        let mut recs = std::mem::take(&mut self.recs);
        let mut orphans = Vec::new();
        let work = {
            let rt = &mut self.rt[ni];
            let clock = self.now + self.clock_off.get(ni).copied().unwrap_or(0);
            let mut cx = Ctx::new(clock, node, &mut rt.rng, &mut out, &mut recs).with_hops(hops);
            let actor = if server {
                Either::S(&mut self.servers[ni])
            } else {
                Either::C(&mut self.clients[ni - self.layout.num_servers() as usize])
            };
            f(actor, &mut cx);
            cx.work()
        };
        if server && self.cfg.image_every > 0 {
            self.server_inputs += 1;
            if self.server_inputs.is_multiple_of(self.cfg.image_every) {
                self.rebuild_from_image(node);
            }
        }
        let cost = if server {
            let c = &self.cfg.cpu;
            let k = self.cfg.cores.get(ni).copied().unwrap_or(1).max(1) as u64;
            (c.per_msg + c.per_op * work.key_ops as u64) / k + c.per_op * work.serial_ops as u64
        } else {
            0
        };
        // What the handler sent leaves when the CPU is done and, if it forced the log,
        // when the flush carrying its records is on disk.
        let mut depart = self.now + cost;
        if server && work.log_syncs > 0 {
            depart = self.rt[ni].log_sync(depart, self.cfg.cpu.fsync);
        }
        let inc = self.rt[ni].inc;
        if cost > 0 {
            self.rt[ni].busy = true;
            self.rt[ni].free_at = self.now + cost;
            self.push(self.now + cost, Ev::Free { node, inc });
        }
        for cmd in out.drain(..) {
            match cmd {
                Command::Send { to, msg, chain } => {
                    // The real cluster refuses from a client what its protocol's rule
                    // does not allow, or a message about another client's transaction;
                    // a client actor that sends such a message is a bug in the rule or
                    // in the client, caught here on every run. (Client i is ClientId(i).)
                    if !server {
                        let me = node.0 - self.layout.num_servers();
                        let ok = meridian_protocols::client_may_send_as(&self.proto, &msg, me);
                        assert!(
                            ok,
                            "{}: client {me} (node {}) sent {msg:?}, which client_may_send refuses",
                            self.proto.name(),
                            node.0
                        );
                    }
                    self.send(node, to, msg, chain.unwrap_or(hops), depart)
                }
                Command::SetTimer { id, after } => {
                    let rt = &mut self.rt[ni];
                    rt.timer_gen += 1;
                    let gen = rt.timer_gen;
                    rt.timers.insert(id, gen);
                    self.push(
                        depart + after,
                        Ev::Arrive {
                            node,
                            input: Input::Timer { id, gen },
                            hops,
                            inc,
                        },
                    );
                }
                Command::CancelTimer { id } => {
                    self.rt[ni].timers.remove(&id);
                }
                // The simulator's workloads submit whole programs: an interactive
                // script that stops for input has no caller, and aborts (as in a
                // client process whose caller has gone).
                Command::AwaitInput { txn, .. } => orphans.push(txn),
                // An operator's log line: the simulation has no operator.
                Command::Note { .. } => {}
            }
        }
        let off = self.clock_off.get(ni).copied().unwrap_or(0);
        for mut r in recs.drain(..) {
            r.wan_trips = hops;
            if off > 0 {
                // The client read its own (skewed) clock; the history is in true time.
                r.start = r.start.saturating_sub(off);
                r.commit_start = r.commit_start.map(|t| t.saturating_sub(off));
                r.end = r.end.map(|t| t.saturating_sub(off));
            }
            if !self.clock_off.is_empty() {
                // Some protocols report `commit_start` from a server's clock: under
                // skew it may fall outside the client's [start, end]; keep it inside.
                let end = r.end.unwrap_or(Time::MAX);
                r.commit_start = r.commit_start.map(|t| t.clamp(r.start, end.max(r.start)));
            }
            self.last_done = self.now;
            let client = r.id.client as usize;
            self.records.push(r);
            if self.client_busy[client] {
                self.in_flight -= 1;
            }
            self.client_busy[client] = false;
            match self.cfg.rate {
                None => {
                    let at = self.now + self.cfg.think;
                    self.push(at, Ev::Submit { client: client as u32 });
                }
                Some(_) => self.drain_backlog(),
            }
        }
        self.out = out;
        self.recs = recs;
        for txn in orphans {
            let args = meridian_txn::script::encode(&[meridian_txn::script::Op::Abort(
                "the script stopped for input and no caller is waiting".into(),
            )]);
            // Boxed: one instantiation of `dispatch`, however deep this recursion goes.
            type Resume<'a, P> = Box<dyn FnOnce(Either<'_, P>, &mut Ctx<'_, <P as Protocol>::Msg>) + 'a>;
            let f: Resume<'_, P> = Box::new(move |a, cx| {
                if let Either::C(c) = a {
                    c.extend(txn, args, cx)
                }
            });
            self.dispatch(node, hops, f);
        }
    }

    pub(crate) fn send(&mut self, from: NodeId, to: NodeId, msg: P::Msg, hops: u32, depart: Time) {
        if let Some(pat) = debug_msgs() {
            let text = format!("{msg:?}");
            if text.contains(pat) {
                eprintln!("{:>10.6}s send {} -> {}: {text}", depart as f64 / 1e9, from.0, to.0);
            }
        }
        if to.0 >= self.layout.num_nodes() {
            return; // addressed to nobody: dropped, like a packet to a dead address
        }
        let (da, db) = (self.layout.dc_of(from), self.layout.dc_of(to));
        let wan = da != db;
        self.msgs_total += 1;
        if wan {
            self.msgs_wan += 1;
        }
        let servers = self.layout.num_servers();
        let client_msg = from.0 >= servers || to.0 >= servers;
        if self
            .partitions
            .iter()
            .any(|(a, b, _, clients)| ((*a, *b) == (da, db) || (*a, *b) == (db, da)) && (*clients || !client_msg))
        {
            return;
        }
        let faulty = !self.healed;
        if faulty && self.plan.loss > 0.0 && self.net_rng.gen_bool(self.plan.loss) {
            return;
        }
        let base = self.one_way[da.0 as usize * self.layout.topology.num_dcs() + db.0 as usize];
        let jitter = if self.cfg.jitter > 0.0 {
            (base as f64 * self.cfg.jitter * self.net_rng.gen::<f64>()) as Time
        } else {
            0
        };
        let mut at = depart + base + jitter;
        let hops = hops + wan as u32;
        let reorder = faulty && self.plan.reorder > 0.0 && self.net_rng.gen_bool(self.plan.reorder);
        if reorder {
            at += (base.max(ms(1.0)) as f64 * self.net_rng.gen::<f64>()) as Time;
        } else {
            let last = self.fifo_link(from, to);
            at = at.max(*last);
            *last = at;
        }
        let inc = self.rt[to.0 as usize].inc;
        if faulty && self.plan.dup > 0.0 && self.net_rng.gen_bool(self.plan.dup) {
            let late = self.plan.dup_late.unwrap_or(base.max(ms(1.0)));
            let extra = (late as f64 * self.net_rng.gen::<f64>()) as Time;
            self.last_late = self.last_late.max(at + extra);
            self.push(
                at + extra,
                Ev::Arrive {
                    node: to,
                    input: Input::Msg { from, msg: msg.clone() },
                    hops,
                    inc,
                },
            );
        }
        self.push(
            at,
            Ev::Arrive {
                node: to,
                input: Input::Msg { from, msg },
                hops,
                inc,
            },
        );
    }

    /// The latest arrival queued on the link `from` → `to` (see `fifo`).
    pub(crate) fn fifo_link(&mut self, from: NodeId, to: NodeId) -> &mut Time {
        let (s, n) = (self.layout.num_servers(), self.layout.num_nodes());
        let (f, t) = (from.0 as usize, to.0 as usize);
        if to.0 < s {
            &mut self.fifo[f * s as usize + t]
        } else if from.0 < s {
            &mut self.fifo[(n as usize + (to.0 - s) as usize) * s as usize + f]
        } else {
            self.fifo_other.entry((from.0, to.0)).or_insert(0)
        }
    }
}

/// `MERIDIAN_DEBUG_MSGS=TEXT`: every message whose `Debug` form contains TEXT is printed
/// to stderr when it is sent (`send`, at its departure; a message a fault drops has a
/// `send` line and no `recv` line) and when its receiver handles it (`recv`), with the
/// virtual time, sender and receiver. For following one transaction of a failing
/// seed, e.g. `MERIDIAN_DEBUG_MSGS='client: 1, seq: 48 }'`.
pub(crate) fn debug_msgs() -> Option<&'static str> {
    static PAT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PAT.get_or_init(|| std::env::var("MERIDIAN_DEBUG_MSGS").ok().filter(|s| !s.is_empty()))
        .as_deref()
}
