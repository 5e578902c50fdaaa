//! The nemesis's schedule: which real fault, on which DCs or nodes, when and for how
//! long. Written on the command line (`--schedule`) or drawn from a seed, and always
//! printed in the command-line form, so any run can be replayed.

use anyhow::{bail, Result};
use rand::{seq::SliceRandom, Rng, SeedableRng};
use std::fmt::Write as _;
use std::time::Duration;

/// Where the servers are: DC names and how many nodes each DC holds (node `i` lives in
/// DC `i / per_dc`).
#[derive(Clone, Debug)]
pub struct Shape {
    /// DC names, by index.
    pub dcs: Vec<String>,
    /// Servers per DC.
    pub per_dc: u32,
}

impl Shape {
    /// Number of servers.
    pub fn servers(&self) -> u32 {
        self.dcs.len() as u32 * self.per_dc
    }
    /// The servers of DC `d`.
    pub fn nodes_of(&self, d: usize) -> impl Iterator<Item = u32> + '_ {
        let p = self.per_dc;
        (d as u32 * p)..(d as u32 + 1) * p
    }
    fn dc(&self, name: &str) -> Result<usize> {
        self.dcs
            .iter()
            .position(|d| d == name)
            .ok_or_else(|| anyhow::anyhow!("unknown DC `{name}` (the cluster's DCs: {})", self.dcs.join(", ")))
    }
    fn node(&self, v: &str) -> Result<u32> {
        let n: u32 = v
            .parse()
            .map_err(|_| anyhow::anyhow!("bad node `{v}`: want a server number"))?;
        if n >= self.servers() {
            bail!(
                "node {n} does not exist (the cluster has servers 0..{})",
                self.servers() - 1
            );
        }
        Ok(n)
    }
    /// Directed links (from node, to node) from every node of DC `a` to every node of `b`.
    fn dc_links(&self, a: usize, b: usize) -> Vec<(u32, u32)> {
        let mut v = vec![];
        for x in self.nodes_of(a) {
            for y in self.nodes_of(b) {
                v.push((x, y));
            }
        }
        v
    }
}

/// One real fault.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Packets on these directed server-to-server links (from, to) are dropped by the
    /// kernel of both ends (nftables): TCP connections stall mid-stream, as in a real
    /// partition.
    Cut(Vec<(u32, u32)>),
    /// The container is killed (SIGKILL) and started again when the step ends.
    Kill(u32),
    /// The container is frozen (`docker pause`): it keeps its sockets, answers nothing.
    Pause(u32),
    /// Extra delay and loss (netem) on these directed links.
    Slow {
        /// Directed links (from, to).
        links: Vec<(u32, u32)>,
        /// Added one-way delay.
        delay: Duration,
        /// Loss, in percent.
        loss_pct: f64,
    },
}

/// One step of a schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// When the fault starts, from the start of the bench's container (its first
    /// transaction comes about 1-2 s later).
    pub at: Duration,
    /// How long it lasts.
    pub for_: Duration,
    /// What it is.
    pub fault: Fault,
    /// The step as written (`partition:dc=TX,at=5s,for=8s`).
    pub text: String,
}

impl Step {
    /// When the fault ends.
    pub fn end(&self) -> Duration {
        self.at + self.for_
    }
}

/// What `--schedule` accepts, for error messages.
pub const GRAMMAR: &str = "steps separated by `;`, each KIND:key=value,...,at=T,for=T with KIND one of \
     partition:dc=NAME | partition:node=N | oneway:from=DC,to=DC | bridge:dc=NAME | kill:node=N | \
     pause:node=N | slow:a=DC,b=DC,delay=T,loss=P (loss in percent)";

fn dur(k: &str, v: &str) -> Result<Duration> {
    meridian_core::time::parse_duration(v)
        .map(Duration::from_nanos)
        .map_err(|e| anyhow::anyhow!("`{k}`: {e}"))
}

/// Parses `--schedule` for a cluster of `shape` and a bench of `total`; every step must
/// end by then. Two steps that kill or pause the same node, or two slow links, may not
/// overlap in time.
pub fn parse(text: &str, shape: &Shape, total: Duration) -> Result<Vec<Step>> {
    let mut steps = vec![];
    for raw in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        steps
            .push(parse_step(raw, shape).map_err(|e| anyhow::anyhow!("bad --schedule step `{raw}`: {e} ({GRAMMAR})"))?);
    }
    if steps.is_empty() {
        bail!("--schedule has no steps ({GRAMMAR})");
    }
    steps.sort_by_key(|s| s.at);
    check(&steps, total)?;
    Ok(steps)
}

fn parse_step(raw: &str, shape: &Shape) -> Result<Step> {
    let (kind, rest) = raw.split_once(':').unwrap_or((raw, ""));
    let mut kv = std::collections::BTreeMap::new();
    for p in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("`{p}` is not key=value"))?;
        if kv.insert(k.to_string(), v.to_string()).is_some() {
            bail!("`{k}` given twice");
        }
    }
    let mut take = |k: &str| kv.remove(k);
    let at = dur("at", &take("at").ok_or_else(|| anyhow::anyhow!("no `at=`"))?)?;
    let for_ = dur("for", &take("for").ok_or_else(|| anyhow::anyhow!("no `for=`"))?)?;
    if for_.is_zero() {
        bail!("`for` must be more than 0");
    }
    let n_dcs = shape.dcs.len();
    let fault = match kind {
        "partition" => match (take("dc"), take("node")) {
            (Some(d), None) => {
                let d = shape.dc(&d)?;
                if n_dcs < 2 {
                    bail!("a DC partition needs two DCs or more");
                }
                let mut links = vec![];
                for o in (0..n_dcs).filter(|o| *o != d) {
                    links.extend(shape.dc_links(d, o));
                    links.extend(shape.dc_links(o, d));
                }
                Fault::Cut(links)
            }
            (None, Some(n)) => {
                let n = shape.node(&n)?;
                if shape.servers() < 2 {
                    bail!("a node partition needs two servers or more");
                }
                let mut links = vec![];
                for o in (0..shape.servers()).filter(|o| *o != n) {
                    links.push((n, o));
                    links.push((o, n));
                }
                Fault::Cut(links)
            }
            _ => bail!("partition takes dc=NAME or node=N"),
        },
        "oneway" => {
            let a = shape.dc(&take("from").ok_or_else(|| anyhow::anyhow!("no `from=`"))?)?;
            let b = shape.dc(&take("to").ok_or_else(|| anyhow::anyhow!("no `to=`"))?)?;
            if a == b {
                bail!("`from` and `to` are the same DC");
            }
            Fault::Cut(shape.dc_links(a, b))
        }
        "bridge" => {
            let d = shape.dc(&take("dc").ok_or_else(|| anyhow::anyhow!("no `dc=`"))?)?;
            if n_dcs < 3 {
                bail!("a bridge needs three DCs or more");
            }
            let mut links = vec![];
            for a in (0..n_dcs).filter(|a| *a != d) {
                for b in (0..n_dcs).filter(|b| *b != d && *b != a) {
                    links.extend(shape.dc_links(a, b));
                }
            }
            Fault::Cut(links)
        }
        "kill" => Fault::Kill(shape.node(&take("node").ok_or_else(|| anyhow::anyhow!("no `node=`"))?)?),
        "pause" => Fault::Pause(shape.node(&take("node").ok_or_else(|| anyhow::anyhow!("no `node=`"))?)?),
        "slow" => {
            let a = shape.dc(&take("a").ok_or_else(|| anyhow::anyhow!("no `a=`"))?)?;
            let b = shape.dc(&take("b").ok_or_else(|| anyhow::anyhow!("no `b=`"))?)?;
            if a == b {
                bail!("`a` and `b` are the same DC");
            }
            let delay = match take("delay") {
                Some(v) => dur("delay", &v)?,
                None => Duration::ZERO,
            };
            let loss_pct = match take("loss") {
                Some(v) => {
                    let p: f64 = v
                        .trim_end_matches('%')
                        .parse()
                        .map_err(|_| anyhow::anyhow!("bad `loss={v}`: want a percentage such as 5"))?;
                    if !(0.0..=100.0).contains(&p) {
                        bail!("`loss={v}` is not between 0 and 100");
                    }
                    if p > 0.0 && p < 0.0001 {
                        bail!("`loss={v}` is below the 0.0001% nftables is given (parts per million)");
                    }
                    p
                }
                None => 0.0,
            };
            if delay.is_zero() && loss_pct == 0.0 {
                bail!("slow needs delay=T or loss=P");
            }
            let mut links = shape.dc_links(a, b);
            links.extend(shape.dc_links(b, a));
            Fault::Slow { links, delay, loss_pct }
        }
        other => bail!("unknown fault `{other}`"),
    };
    if let Some(k) = kv.keys().next() {
        bail!("unknown key `{k}` for {kind}");
    }
    Ok(Step {
        at,
        for_,
        fault,
        text: raw.to_string(),
    })
}

/// Every step ends within the bench; kills and pauses of one node, and slow links
/// (one queueing discipline per container), do not overlap.
fn check(steps: &[Step], total: Duration) -> Result<()> {
    for s in steps {
        if s.end() > total {
            bail!(
                "step `{}` ends at {:.1} s, after the bench's {:.1} s: every fault must be healed while the bench runs",
                s.text,
                s.end().as_secs_f64(),
                total.as_secs_f64()
            );
        }
    }
    for (i, a) in steps.iter().enumerate() {
        for b in &steps[i + 1..] {
            let overlap = a.at < b.end() && b.at < a.end();
            let clash = match (&a.fault, &b.fault) {
                (Fault::Kill(x) | Fault::Pause(x), Fault::Kill(y) | Fault::Pause(y)) => x == y,
                (Fault::Slow { .. }, Fault::Slow { .. }) => true,
                _ => false,
            };
            if overlap && clash {
                bail!("steps `{}` and `{}` overlap in time on the same target", a.text, b.text);
            }
        }
    }
    Ok(())
}

/// A schedule drawn from `seed` for a bench of `total`: faults one after another from
/// 5 s on, each 4–8 s long with 2–4 s between, the last healed 8 s before the end (so
/// the bench sees the cluster recover), each of a kind drawn in turn.
pub fn draw(seed: u64, shape: &Shape, total: Duration) -> Result<Vec<Step>> {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let last_end = total.saturating_sub(Duration::from_secs(8));
    let mut at = Duration::from_secs(5);
    let mut text = String::new();
    let n_dcs = shape.dcs.len();
    let mut kinds: Vec<&str> = vec!["partition-dc", "kill", "pause", "slow", "partition-node"];
    if n_dcs >= 2 {
        kinds.push("oneway");
    }
    if n_dcs >= 3 {
        kinds.push("bridge");
    }
    if n_dcs < 2 {
        kinds.retain(|k| !matches!(*k, "partition-dc" | "slow"));
    }
    kinds.shuffle(&mut rng);
    for k in kinds.iter().cycle() {
        let len = Duration::from_secs(rng.gen_range(4..=8));
        if at + len > last_end {
            break;
        }
        let dc = |rng: &mut rand_xoshiro::Xoshiro256PlusPlus| shape.dcs[rng.gen_range(0..n_dcs)].clone();
        let node = rng.gen_range(0..shape.servers());
        let what = match *k {
            "partition-dc" => format!("partition:dc={}", dc(&mut rng)),
            "partition-node" => format!("partition:node={node}"),
            "kill" => format!("kill:node={node}"),
            "pause" => format!("pause:node={node}"),
            "slow" => {
                let a = rng.gen_range(0..n_dcs);
                let b = (a + rng.gen_range(1..n_dcs)) % n_dcs;
                format!(
                    "slow:a={},b={},delay={}ms,loss=5",
                    shape.dcs[a],
                    shape.dcs[b],
                    rng.gen_range(1..=4) * 50
                )
            }
            "oneway" => {
                let a = rng.gen_range(0..n_dcs);
                let b = (a + rng.gen_range(1..n_dcs)) % n_dcs;
                format!("oneway:from={},to={}", shape.dcs[a], shape.dcs[b])
            }
            _ => format!("bridge:dc={}", dc(&mut rng)),
        };
        let _ = write!(
            text,
            "{}{what},at={}s,for={}s",
            if text.is_empty() { "" } else { ";" },
            at.as_secs(),
            len.as_secs()
        );
        at += len + Duration::from_secs(rng.gen_range(2..=4));
    }
    if text.is_empty() {
        bail!(
            "a {:.0} s bench leaves no room for a fault (faults start at 5 s and end 8 s before the end): give --duration 20s or more",
            total.as_secs_f64()
        );
    }
    parse(&text, shape, total)
}

/// The schedule in `--schedule` form.
pub fn render(steps: &[Step]) -> String {
    steps.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us3() -> Shape {
        Shape {
            dcs: vec!["NY".into(), "CA".into(), "TX".into()],
            per_dc: 2,
        }
    }

    #[test]
    fn parses_every_kind_and_refuses_what_cannot_run() {
        let s = us3();
        let t = Duration::from_secs(40);
        let steps = parse(
            "kill:node=2,at=10s,for=5s; partition:dc=TX,at=2s,for=4s;oneway:from=NY,to=CA,at=3s,for=1s;\
             bridge:dc=NY,at=20s,for=2s;pause:node=2,at=16s,for=2s;slow:a=NY,b=CA,delay=100ms,loss=5%,at=30s,for=5s;\
             partition:node=5,at=1s,for=1s",
            &s,
            t,
        )
        .unwrap();
        assert_eq!(steps.len(), 7);
        assert_eq!(steps[0].at, Duration::from_secs(1));
        // TX (nodes 4, 5) cut from the four others, both ways.
        let tx = steps.iter().find(|x| x.text.starts_with("partition:dc")).unwrap();
        let Fault::Cut(l) = &tx.fault else { panic!() };
        assert_eq!(l.len(), 16);
        assert!(l.contains(&(4, 0)) && l.contains(&(0, 5)) && !l.contains(&(0, 1)));
        // One way: NY to CA only.
        let ow = steps.iter().find(|x| x.text.starts_with("oneway")).unwrap();
        assert_eq!(ow.fault, Fault::Cut(vec![(0, 2), (0, 3), (1, 2), (1, 3)]));
        // A bridge through NY cuts CA-TX both ways and nothing of NY's.
        let br = steps.iter().find(|x| x.text.starts_with("bridge")).unwrap();
        let Fault::Cut(l) = &br.fault else { panic!() };
        assert_eq!(l.len(), 8);
        assert!(l.iter().all(|(a, b)| *a >= 2 && *b >= 2));
        for (bad, why) in [
            ("kill:node=9,at=1s,for=1s", "does not exist"),
            ("partition:dc=XX,at=1s,for=1s", "unknown DC `XX`"),
            ("kill:node=1,at=38s,for=5s", "after the bench"),
            ("kill:node=1,at=1s", "no `for=`"),
            ("kill:node=1,at=1s,for=0s", "more than 0"),
            ("flood:at=1s,for=1s", "unknown fault"),
            ("slow:a=NY,b=NY,delay=1ms,at=1s,for=1s", "same DC"),
            ("slow:a=NY,b=CA,at=1s,for=1s", "delay=T or loss=P"),
            ("kill:node=1,at=1s,for=5s;pause:node=1,at=3s,for=1s", "overlap"),
            ("kill:node=1,color=red,at=1s,for=5s", "unknown key `color`"),
            ("slow:a=NY,b=CA,loss=0.00001,at=1s,for=1s", "below the 0.0001%"),
            ("", "no steps"),
        ] {
            let e = parse(bad, &s, t).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn a_drawn_schedule_replays_from_its_text_and_heals_before_the_end() {
        let s = us3();
        let t = Duration::from_secs(60);
        for seed in 0..50 {
            let steps = draw(seed, &s, t).unwrap();
            assert!(!steps.is_empty());
            assert!(steps
                .iter()
                .all(|x| x.at >= Duration::from_secs(5) && x.end() <= Duration::from_secs(52)));
            assert_eq!(parse(&render(&steps), &s, t).unwrap(), steps);
            assert_eq!(draw(seed, &s, t).unwrap(), steps, "one seed, one schedule");
        }
        assert!(draw(1, &s, Duration::from_secs(10))
            .unwrap_err()
            .to_string()
            .contains("no room"));
    }
}
