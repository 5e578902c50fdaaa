//! Paper experiments (`meridian compare --experiment NAME`), one file per paper (or
//! baseline; a folder for one that outgrew a file, like `hierval/`), each declaring its
//! [`EXPERIMENTS`](rc::EXPERIMENTS); [`all`] is the registry `--experiment list` reads.
//! Adding a paper's figures is adding one file here and one line to [`all`]. This module
//! also holds what every experiment shares: a checked run and its verdict column.

pub mod catenae;
pub mod cluster;
pub mod crossstitch;
pub mod hacommit;
pub mod hierval;
pub mod rc;
pub mod twopc;

use crate::{progress, RunArgs};
use anyhow::Result;
use meridian_core::Topology;
use meridian_sim::{SimConfig, SimOutput};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// A named experiment: what `--experiment NAME` runs and `meridian report` collects.
pub struct Experiment {
    /// Its `--experiment` name (also its block in docs/EVALUATION.md and its figure's
    /// file name).
    pub name: &'static str,
    /// What it reproduces (paper, figure, what is compared).
    pub about: &'static str,
    /// Runs it into `cx`: tables, text, figures and claims, in order. A failed check
    /// sets `cx.failed` (exit 3).
    pub run: fn(&mut Ctx) -> Result<()>,
    /// False for experiments on real clusters (wall-clock, ports, processes), which
    /// `meridian report` leaves out.
    pub sim: bool,
}

/// Every experiment, in `--experiment list` order.
pub fn all() -> Vec<&'static Experiment> {
    [
        twopc::EXPERIMENTS,
        rc::EXPERIMENTS,
        hacommit::EXPERIMENTS,
        crossstitch::EXPERIMENTS,
        hierval::EXPERIMENTS,
        catenae::EXPERIMENTS,
        cluster::EXPERIMENTS,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Runs `e` live (`compare --experiment`): blocks print as they finish; a failed check
/// exits 3.
pub fn run_live(e: &Experiment, args: &RunArgs) -> Result<ExitCode> {
    let mut cx = Ctx::new(args, true, false);
    (e.run)(&mut cx)?;
    cx.flush();
    Ok(cx.exit_code())
}

/// What an experiment produces, in order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Block {
    /// A paragraph (consecutive `say` lines join into one).
    Text(String),
    /// A table of formatted cells.
    Table(Table),
    /// A chart: our series beside the paper's.
    Figure(Figure),
    /// One measurable claim of a paper, for the report's summary table.
    Claim(Claim),
}

/// A table: a header and rows of formatted cells.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Plain text, columns aligned (the first to the left, the rest to the right).
    pub fn text(&self) -> String {
        let cols = self
            .header
            .len()
            .max(self.rows.iter().map(|r| r.len()).max().unwrap_or(0));
        let mut w = vec![0usize; cols];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                if i == 0 {
                    line.push_str(&format!("{c:<width$}", width = w[0]));
                } else {
                    line.push_str(&format!("  {c:>width$}", width = w[i]));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// A Markdown table.
    pub fn markdown(&self) -> String {
        let esc = |c: &String| c.replace('|', "\\|");
        let mut out = format!("| {} |\n", self.header.iter().map(esc).collect::<Vec<_>>().join(" | "));
        out.push_str(&format!("|{}\n", "---|".repeat(self.header.len())));
        for r in &self.rows {
            out.push_str(&format!("| {} |\n", r.iter().map(esc).collect::<Vec<_>>().join(" | ")));
        }
        out
    }
}

/// Where a series' points come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    /// Measured by this run.
    Ours,
    /// Stated as a number in the paper's text or tables.
    PaperText,
    /// Read off the paper's figure (approximate).
    PaperFigure,
}

/// One curve (or bar group) of a figure.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub source: Source,
    /// Points; a non-finite y breaks the line there (no data in that interval). In
    /// JSON a gap's y is `null`.
    #[serde(with = "gaps")]
    pub points: Vec<(f64, f64)>,
    /// For a paper series: the measured series it is the paper's version of (drawn in
    /// its colour). When unset, the measured series with the longest common name
    /// prefix.
    #[serde(default)]
    pub of: Option<String>,
}

/// Points whose non-finite y (a gap) is `null` in JSON, which has no NaN.
mod gaps {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(points: &[(f64, f64)], s: S) -> Result<S::Ok, S::Error> {
        let v: Vec<(f64, Option<f64>)> = points.iter().map(|&(x, y)| (x, y.is_finite().then_some(y))).collect();
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(f64, f64)>, D::Error> {
        let v: Vec<(f64, Option<f64>)> = Vec::deserialize(d)?;
        Ok(v.into_iter().map(|(x, y)| (x, y.unwrap_or(f64::NAN))).collect())
    }
}

/// A chart of one reproduced paper figure.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Figure {
    /// File stem under `docs/figures/` (the experiment's name, or name plus a suffix).
    pub file: String,
    pub title: String,
    /// Axis labels, with units.
    pub x: String,
    pub y: String,
    /// Names for x = 0, 1, 2, ... when the x axis is categorical (DC sets, placements).
    pub categories: Vec<String>,
    /// A logarithmic y axis.
    pub log_y: bool,
    /// Markers only, no lines (a scatter of single observations).
    #[serde(default)]
    pub scatter: bool,
    pub series: Vec<Series>,
    /// Events and intervals on the x axis, drawn as grey vertical lines or bands with a
    /// label: (from, to, label); from == to is an instant.
    #[serde(default)]
    pub marks: Vec<(f64, f64, String)>,
    /// Each point is a mean over a window of this width centred on its x: drawn as a
    /// level across its window, never joined to the next (a change between windows is
    /// not gradual).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<f64>,
    /// Printed under the chart and in EVALUATION.md's caption: what the paper gives for
    /// this figure where it is not a paper series (bounds, events, or why there is no
    /// paper series at all). Every figure has a paper series or a note.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Figure {
    /// An empty figure; add series with [`Figure::ours`] and [`Figure::paper`].
    pub fn new(file: &str, title: &str, x: &str, y: &str) -> Self {
        Figure {
            file: file.into(),
            title: title.into(),
            x: x.into(),
            y: y.into(),
            categories: vec![],
            log_y: false,
            scatter: false,
            series: vec![],
            marks: vec![],
            windows: None,
            note: String::new(),
        }
    }

    /// Points are means over windows of `width` centred on their x ([`Figure::windows`]).
    pub fn windows(mut self, width: f64) -> Self {
        self.windows = Some(width);
        self
    }

    /// A note under the chart ([`Figure::note`]); a second call adds a sentence.
    pub fn note(mut self, text: &str) -> Self {
        if !self.note.is_empty() {
            self.note.push(' ');
        }
        self.note.push_str(text);
        self
    }

    /// The note of a figure whose paper figure has no values in the paper's text: our
    /// copy of the paper has its caption but not its image, so nothing can be read off
    /// it. `says` is what the text does say, in words (quoted), or empty.
    pub fn no_paper_values(self, says: &str) -> Self {
        let base = "The paper's text gives no values for this figure, and our copy of the paper has its caption but not its image, so none can be read off: the chart shows our runs alone.";
        let n = self.note(base);
        if says.is_empty() {
            n
        } else {
            n.note(&format!("The text says: {says}"))
        }
    }

    /// The note of a figure beyond the paper (no paper figure behind it): `why` says
    /// what it adds.
    pub fn beyond_paper(self, why: &str) -> Self {
        self.note(&format!("Beyond the paper, which has no such figure: {why}"))
    }

    /// Markers only: each point is one observation, not a curve.
    pub fn scatter(mut self) -> Self {
        self.scatter = true;
        self
    }

    /// An event at `x` (from == to) or an interval, labelled (a crash, an outage).
    pub fn mark(mut self, from: f64, to: f64, label: &str) -> Self {
        self.marks.push((from, to, label.into()));
        self
    }

    /// Categorical x: point i is drawn at `cats[i]`.
    pub fn categories(mut self, cats: &[&str]) -> Self {
        self.categories = cats.iter().map(|c| c.to_string()).collect();
        self
    }

    pub fn log_y(mut self) -> Self {
        self.log_y = true;
        self
    }

    /// A measured series.
    pub fn ours(mut self, name: &str, points: Vec<(f64, f64)>) -> Self {
        self.series.push(Series {
            name: name.into(),
            source: Source::Ours,
            points,
            of: None,
        });
        self
    }

    /// A paper series: `source` says whether from its text or read off its figure.
    pub fn paper(mut self, name: &str, source: Source, points: Vec<(f64, f64)>) -> Self {
        self.series.push(Series {
            name: name.into(),
            source,
            points,
            of: None,
        });
        self
    }

    /// Names the measured series the last paper series belongs to (same colour).
    pub fn of(mut self, ours: &str) -> Self {
        if let Some(s) = self.series.last_mut() {
            s.of = Some(ours.into());
        }
        self
    }
}

/// How a claim fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    Reproduced,
    Partly,
    NotReproduced,
    /// The claim does not apply to a simulation (e.g. a prototype's CPU overhead).
    NotApplicable,
    /// The experiment is not built yet.
    NotBuilt,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Reproduced => "reproduced",
            Status::Partly => "partly",
            Status::NotReproduced => "not reproduced",
            Status::NotApplicable => "not applicable",
            Status::NotBuilt => "not built",
        }
    }

    /// By the ratio ours/paper: within `tol` of 1 reproduced, within `2 tol` partly,
    /// else not reproduced.
    pub fn by_ratio(ratio: f64, tol: f64) -> Status {
        let d = (ratio - 1.0).abs();
        if !ratio.is_finite() {
            Status::NotReproduced
        } else if d <= tol {
            Status::Reproduced
        } else if d <= 2.0 * tol {
            Status::Partly
        } else {
            Status::NotReproduced
        }
    }
}

/// One measurable claim of a paper, with our figure beside it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Claim {
    /// The paper's file under `../shared/papers/`, e.g. `replicated-commit.md`.
    pub paper: String,
    /// Where the claim is, e.g. `Fig. 3` or `§4.3`.
    pub at: String,
    /// The claim, in a few words.
    pub claim: String,
    /// The paper's value, formatted (with its unit).
    pub paper_value: String,
    /// Ours, formatted the same way.
    pub ours: String,
    /// Ours / paper, where both are numbers.
    pub ratio: Option<f64>,
    pub status: Status,
    /// Where not reproduced (or partly): the measured cause, in one line.
    pub cause: String,
    /// A claim about something we built beyond the paper (e.g. hierarchical
    /// validation pipelined, which §IV-D only predicts): the summary counts it apart
    /// from the papers' own claims.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beyond: bool,
}

impl Claim {
    /// A numeric claim: status by ratio within `tol` (see [`Status::by_ratio`]); unit
    /// appended to both values. [`Claim::because`] names the cause where it is not
    /// reproduced.
    pub fn numeric(paper: &str, at: &str, claim: &str, paper_value: f64, ours: f64, unit: &str, tol: f64) -> Claim {
        let ratio = ours / paper_value;
        let status = Status::by_ratio(ratio, tol);
        let fmt = |x: f64| {
            let s = if x.abs() >= 100.0 || (x.fract() == 0.0 && x.abs() < 1e9) {
                format!("{x:.0}")
            } else if x.abs() >= 10.0 {
                format!("{x:.1}")
            } else {
                format!("{x:.2}")
            };
            if unit.is_empty() {
                s
            } else {
                format!("{s} {unit}")
            }
        };
        Claim {
            paper: paper.into(),
            at: at.into(),
            claim: claim.into(),
            paper_value: fmt(paper_value),
            ours: fmt(ours),
            ratio: Some(ratio),
            status,
            cause: String::new(),
            beyond: false,
        }
    }

    /// Marks a claim about something built beyond the paper (see `beyond`).
    pub fn beyond_paper(mut self) -> Claim {
        self.beyond = true;
        self
    }

    /// The measured cause, kept only where the claim is not (fully) reproduced.
    pub fn because(mut self, cause: &str) -> Claim {
        if self.status != Status::Reproduced {
            self.cause = cause.into();
        }
        self
    }

    /// A claim judged by hand-written rule (a shape, an order, a yes/no): `holds` gives
    /// reproduced or not reproduced.
    pub fn shape(
        paper: &str,
        at: &str,
        claim: &str,
        paper_value: &str,
        ours: String,
        holds: bool,
        cause: &str,
    ) -> Claim {
        Claim {
            paper: paper.into(),
            at: at.into(),
            claim: claim.into(),
            paper_value: paper_value.into(),
            ours,
            ratio: None,
            status: if holds {
                Status::Reproduced
            } else {
                Status::NotReproduced
            },
            cause: if holds { String::new() } else { cause.into() },
            beyond: false,
        }
    }

    /// Overrides the status (e.g. partly: the shape holds but the values do not).
    pub fn with_status(mut self, s: Status, cause: &str) -> Claim {
        self.status = s;
        self.cause = if s == Status::Reproduced {
            String::new()
        } else {
            cause.into()
        };
        self
    }
}

/// An experiment in progress: the run flags, whether any check failed, and what it
/// produced.
pub struct Ctx<'a> {
    pub args: &'a RunArgs,
    pub failed: bool,
    /// `meridian report --quick`: every sweep at a small scale ([`Ctx::n`],
    /// [`Ctx::sweep`]), to check that each experiment runs and checks clean.
    pub quick: bool,
    /// Print blocks as they finish (`compare`) or only collect them (`report`).
    live: bool,
    /// Blocks printed so far (live mode).
    printed: usize,
    /// Simulations run so far, and the line on stderr that says which is running
    /// (live mode on a terminal).
    runs: u64,
    spinner: Option<indicatif::ProgressBar>,
    pub blocks: Vec<Block>,
}

impl<'a> Ctx<'a> {
    pub fn new(args: &'a RunArgs, live: bool, quick: bool) -> Self {
        Ctx {
            args,
            failed: false,
            quick,
            live,
            printed: 0,
            runs: 0,
            spinner: None,
            blocks: vec![],
        }
    }

    /// A line of text (consecutive lines join into one paragraph).
    pub fn say(&mut self, line: impl Into<String>) {
        let line = line.into();
        if let Some(Block::Text(t)) = self.blocks.last_mut() {
            t.push('\n');
            t.push_str(&line);
        } else {
            self.push(Block::Text(line));
        }
    }

    /// Starts a table; [`Ctx::row`] adds to it.
    pub fn table(&mut self, header: &[&str]) {
        self.push(Block::Table(Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: vec![],
        }));
    }

    /// A row of the table started last.
    pub fn row(&mut self, cells: Vec<String>) {
        match self.blocks.last_mut() {
            Some(Block::Table(t)) => t.rows.push(cells),
            _ => {
                // A row after other output: it continues the last table.
                let t = self.blocks.iter_mut().rev().find_map(|b| match b {
                    Block::Table(t) => Some(t),
                    _ => None,
                });
                t.expect("row() before any table()").rows.push(cells);
            }
        }
    }

    pub fn figure(&mut self, f: Figure) {
        self.push(Block::Figure(f));
    }

    pub fn claim(&mut self, c: Claim) {
        self.push(Block::Claim(c));
    }

    fn push(&mut self, b: Block) {
        // Live mode prints what is complete: a table may still get rows until the next
        // text or table (claims and figures may come between its rows), so only those
        // two close what came before.
        let closes = matches!(b, Block::Text(_) | Block::Table(_));
        self.blocks.push(b);
        if self.live && closes {
            self.print_upto(self.blocks.len() - 1);
        }
    }

    /// Prints whatever is left (live mode), and clears the progress line.
    pub fn flush(&mut self) {
        if self.live {
            self.print_upto(self.blocks.len());
        }
        if let Some(sp) = self.spinner.take() {
            sp.finish_and_clear();
        }
    }

    fn print_upto(&mut self, end: usize) {
        // Lines printed under the progress line would be torn by its redraws.
        match self.spinner.clone() {
            Some(sp) => sp.suspend(|| self.print_blocks(end)),
            None => self.print_blocks(end),
        }
    }

    fn print_blocks(&mut self, end: usize) {
        while self.printed < end {
            match &self.blocks[self.printed] {
                Block::Text(t) => println!("{t}"),
                Block::Table(t) => print!("{}", t.text()),
                Block::Figure(f) => println!("(figure: {}.svg, written by `meridian report`)", f.file),
                Block::Claim(c) => println!(
                    "claim {} {}: {} | paper {} | ours {}{} | {}{}",
                    c.paper,
                    c.at,
                    c.claim,
                    c.paper_value,
                    c.ours,
                    c.ratio.map_or(String::new(), |r| format!(" | ratio {r:.2}")),
                    c.status.label(),
                    if c.cause.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", c.cause)
                    }
                ),
            }
            self.printed += 1;
        }
    }

    /// `full`, or a tenth of it (at least 30) in quick mode: transaction counts.
    pub fn n(&self, full: u64) -> u64 {
        if self.quick {
            (full / 10).max(30).min(full)
        } else {
            full
        }
    }

    /// The points of a sweep; in quick mode only its first and last.
    pub fn sweep<T: Copy>(&self, points: &[T]) -> Vec<T> {
        if self.quick && points.len() > 2 {
            vec![points[0], points[points.len() - 1]]
        } else {
            points.to_vec()
        }
    }

    /// The run flags' config on `topo` with `workload`, `txns` and `clients`, clients
    /// spread over `client_dcs` (names; empty: every DC), and no faults (an experiment
    /// sets its own); `txns` is scaled down in quick mode ([`Ctx::n`]).
    pub fn cfg(
        &self,
        topo: &Topology,
        workload: &str,
        txns: u64,
        clients: u32,
        client_dcs: &[&str],
    ) -> Result<SimConfig> {
        let mut c = self.args.config()?;
        c.topology = topo.clone();
        c.workload = workload.to_string();
        c.txns = self.n(txns);
        c.clients = clients;
        c.client_dcs = client_dcs.iter().map(|d| topo.dc(d)).collect::<Result<_, _>>()?;
        c.faults = String::new();
        Ok(c)
    }

    /// A checked run (a failed check makes the experiment exit 3).
    pub fn run(&mut self, protocol: &str, cfg: &SimConfig) -> Result<SimOutput> {
        self.runs += 1;
        let out = if self.live && crate::show_progress() {
            // One line that says which run of the experiment this is and how far it
            // got (an experiment is many runs, most too short for a bar of their own).
            let bar = self.spinner.get_or_insert_with(|| {
                let b = indicatif::ProgressBar::new_spinner();
                b.enable_steady_tick(std::time::Duration::from_millis(200));
                b
            });
            let (k, topo) = (self.runs, cfg.topology.name.clone());
            bar.set_message(format!("run {k}: {protocol} on {topo}"));
            let label = protocol.to_string();
            let bar = bar.clone();
            let mut step = move |done: u64, total: u64| {
                bar.set_message(format!("run {k}: {label} on {topo}, {done}/{total} txns"));
            };
            let out = meridian_sim::run_named(protocol, cfg, &mut step);
            out?
        } else if self.live {
            meridian_sim::run_named(protocol, cfg, &mut progress(protocol))?
        } else {
            meridian_sim::run_named(protocol, cfg, &mut |_, _| {})?
        };
        if !out.report.check.ok() {
            self.failed = true;
            eprintln!("{protocol}: check FAILED on {}:", cfg.topology.name);
            for a in out.report.check.anomalies.iter().take(5) {
                eprintln!("  {a}");
            }
        }
        Ok(out)
    }

    /// 0, or 3 if any check failed.
    pub fn exit_code(&self) -> ExitCode {
        if self.failed {
            ExitCode::from(3)
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// A number with `d` decimals (table cells).
pub fn f(x: f64, d: usize) -> String {
    format!("{x:.d$}")
}

/// An optional paper value with `d` decimals, or `-`.
pub fn fo(x: Option<f64>, d: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.d$}"))
}

/// The verdict column: `ok` or `FAIL`.
pub fn ok(o: &SimOutput) -> &'static str {
    if o.report.check.ok() {
        "ok"
    } else {
        "FAIL"
    }
}
