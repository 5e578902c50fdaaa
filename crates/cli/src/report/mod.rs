//! `meridian report`: runs every paper experiment (the simulated ones of
//! `compare --experiment list`), independent experiments in parallel, and writes
//!
//! - `OUT/evaluation.json`: every experiment's blocks (text, tables, figures' data,
//!   claims) and its wall time: the data everything else is drawn from;
//! - `OUT/figures/NAME.svg`: each reproduced figure, ours beside the paper's values;
//! - `OUT/EVALUATION.md`: the template (OUT/EVALUATION.md itself if it exists, else
//!   the copy built into the binary) with every generated block rewritten.
//!
//! A generated block sits between `<!-- BEGIN GENERATED NAME ... -->` and
//! `<!-- END GENERATED NAME -->`; NAME is an experiment, `summary` (one row per claim
//! of every paper, plus the claims not built yet) or `timing` (the run's wall times,
//! the only part that differs between two runs). Everything outside the markers is
//! prose and kept as it is. `--only` re-runs some experiments and keeps the others'
//! data from `OUT/evaluation.json`.
//!
//! Every simulation ends with the checker; a failed check is shown in its table's
//! `check` column and makes the command exit 3 (the files are still written).

use crate::experiments::{self, Block, Claim, Experiment, Source, Status};
use crate::RunArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

mod draw;
use draw::draw;

/// The template built into the binary (used when OUT has no EVALUATION.md).
const TEMPLATE: &str = include_str!("../../../../docs/EVALUATION.md");

#[derive(Args)]
pub struct ReportArgs {
    /// Directory to write EVALUATION.md, evaluation.json and figures/ into.
    #[arg(long, default_value = "docs")]
    out: PathBuf,
    /// Every experiment at a small scale (sweeps cut to their ends, a tenth of the
    /// transactions): checks that each one runs, checks clean and draws its figure.
    #[arg(long)]
    quick: bool,
    /// Only these experiments or papers, comma-separated: an experiment name (rc-fig3)
    /// or a paper (2pc, rc, hacommit, crossstitch, hierval, catenae).
    #[arg(long)]
    only: Option<String>,
    /// Experiments run at once (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run nothing: rewrite EVALUATION.md and the figures from OUT/evaluation.json
    /// (after editing the prose, say).
    #[arg(long, conflicts_with_all = ["quick", "only", "jobs"])]
    no_run: bool,
}

/// One experiment's result, as kept in `evaluation.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExpData {
    pub name: String,
    pub about: String,
    pub blocks: Vec<Block>,
    pub failed: bool,
    pub wall_s: f64,
}

/// What `evaluation.json` holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Data {
    /// Whether this was a `--quick` run (its figures are not the evaluation's).
    pub quick: bool,
    pub experiments: Vec<ExpData>,
    /// Wall time of the last run, how many experiments it ran (`--only` runs fewer
    /// than the file holds) and the jobs it used.
    pub wall_s: f64,
    #[serde(default)]
    pub ran: usize,
    pub jobs: usize,
}

/// Paper keys for `--only`, and the experiment-name prefix of each.
const PAPERS: &[(&str, &str)] = &[
    ("2pc", "2pc-"),
    ("rc", "rc-"),
    ("replicated-commit", "rc-"),
    ("hacommit", "hacommit-"),
    ("crossstitch", "cs-"),
    ("cs", "cs-"),
    ("hierval", "hv-"),
    ("hv", "hv-"),
    ("hierarchical-validation", "hv-"),
    ("catenae", "cat-"),
    ("cat", "cat-"),
];

/// The experiments `only` selects (all simulated ones if `None`), or an error naming
/// what is known.
fn select(only: Option<&str>) -> Result<Vec<&'static Experiment>> {
    let sims: Vec<&Experiment> = experiments::all().into_iter().filter(|e| e.sim).collect();
    let Some(only) = only else {
        return Ok(sims);
    };
    let mut out: Vec<&Experiment> = vec![];
    for want in only.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let hit: Vec<&Experiment> = match PAPERS.iter().find(|(k, _)| *k == want) {
            Some((_, prefix)) => sims.iter().copied().filter(|e| e.name.starts_with(prefix)).collect(),
            None => sims.iter().copied().filter(|e| e.name == want).collect(),
        };
        if hit.is_empty() {
            bail!(
                "--only: unknown experiment or paper `{want}` (papers: 2pc, rc, hacommit, crossstitch, hierval, catenae; experiments: {})",
                sims.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
            );
        }
        for e in hit {
            if !out.iter().any(|o| o.name == e.name) {
                out.push(e);
            }
        }
    }
    Ok(out)
}

pub fn report(a: &ReportArgs) -> Result<ExitCode> {
    let chosen = select(a.only.as_deref())?;
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    std::fs::create_dir_all(a.out.join("figures"))
        .with_context(|| format!("cannot create {}", a.out.join("figures").display()))?;
    let json_path = a.out.join("evaluation.json");
    // A missing file is a first run; an unreadable one is an error, never silently
    // empty (`--only` would then drop every other experiment's data).
    let old: Data = match std::fs::read_to_string(&json_path) {
        Ok(s) => serde_json::from_str(&s).with_context(|| {
            format!(
                "{} is not a report's data (delete it to start over)",
                json_path.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Data::default(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", json_path.display())),
    };
    let template_path = a.out.join("EVALUATION.md");
    let template = match std::fs::read_to_string(&template_path) {
        Ok(s) => s,
        Err(_) => TEMPLATE.to_string(),
    };
    // Check the template before the long part.
    let markers = parse_markers(&template)?;
    for e in &chosen {
        if !markers.iter().any(|m| m == e.name) {
            bail!(
                "{} has no generated block for `{}`: add `<!-- BEGIN GENERATED {1} -->` and `<!-- END GENERATED {1} -->` where it belongs",
                template_path.display(),
                e.name
            );
        }
    }

    if a.no_run {
        if old.experiments.is_empty() {
            bail!(
                "--no-run: {} holds no experiments; run `meridian report` first",
                json_path.display()
            );
        }
        write_out(&a.out, &template, &old)?;
        println!(
            "rewrote {} and its figures from {}",
            template_path.display(),
            json_path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }

    let t0 = Instant::now();
    // Longest first, by the last run's wall times (unknown ones first of all).
    let mut chosen = chosen;
    let last = |n: &str| {
        old.experiments
            .iter()
            .find(|d| d.name == n)
            .map_or(f64::MAX, |d| d.wall_s)
    };
    chosen.sort_by(|a, b| last(b.name).total_cmp(&last(a.name)));
    let ran = run_all(&chosen, a.quick, jobs)?;
    let wall_s = t0.elapsed().as_secs_f64();

    // Merge: what ran replaces its old entry; registry order.
    let mut data = Data {
        quick: a.quick,
        experiments: vec![],
        wall_s,
        ran: ran.len(),
        jobs,
    };
    for e in experiments::all().into_iter().filter(|e| e.sim) {
        if let Some(d) = ran.iter().find(|d| d.name == e.name) {
            data.experiments.push(d.clone());
        } else if let Some(d) = old.experiments.iter().find(|d| d.name == e.name) {
            if old.quick == a.quick {
                data.experiments.push(d.clone());
            }
        }
    }
    write_out(&a.out, &template, &data)?;

    let failed: Vec<&str> = ran.iter().filter(|d| d.failed).map(|d| d.name.as_str()).collect();
    // The papers' own claims (those about what we built beyond a paper apart).
    let claims: Vec<&Claim> = claims(&data).filter(|c| !c.beyond).collect();
    let count = |s: Status| claims.iter().filter(|c| c.status == s).count();
    println!(
        "{} experiments in {:.1} s on {jobs} job(s){}; {} claims: {} reproduced, {} partly, {} not reproduced (and {} beyond the papers); wrote {}, {} and {}",
        ran.len(),
        wall_s,
        if a.quick { " (quick)" } else { "" },
        claims.len(),
        count(Status::Reproduced),
        count(Status::Partly),
        count(Status::NotReproduced),
        self::claims(&data).filter(|c| c.beyond).count(),
        template_path.display(),
        json_path.display(),
        a.out.join("figures").display()
    );
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("check FAILED in: {}", failed.join(", "));
        Ok(ExitCode::from(3))
    }
}

/// Writes OUT/figures/*.svg, OUT/EVALUATION.md (from `template`) and
/// OUT/evaluation.json from `data`.
fn write_out(out: &Path, template: &str, data: &Data) -> Result<()> {
    for d in &data.experiments {
        for b in &d.blocks {
            if let Block::Figure(f) = b {
                let path = out.join("figures").join(format!("{}.svg", f.file));
                draw(f, &d.name, &path).with_context(|| format!("drawing {}", path.display()))?;
            }
        }
    }
    let md = render(template, data)?;
    let template_path = out.join("EVALUATION.md");
    std::fs::write(&template_path, md).with_context(|| format!("cannot write {}", template_path.display()))?;
    let json_path = out.join("evaluation.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(data)? + "\n")
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    Ok(())
}

/// Runs `chosen` on `jobs` threads, in order, with one progress bar.
fn run_all(chosen: &[&'static Experiment], quick: bool, jobs: usize) -> Result<Vec<ExpData>> {
    let args = RunArgs::defaults();
    let queue: Mutex<Vec<&Experiment>> = Mutex::new(chosen.iter().rev().copied().collect());
    let done: Mutex<Vec<Result<ExpData>>> = Mutex::new(vec![]);
    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::new(chosen.len() as u64);
        b.set_style(
            ProgressStyle::with_template("report [{bar:30}] {pos}/{len} experiments ({elapsed}) {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Some(b)
    } else {
        None
    };
    std::thread::scope(|s| {
        for _ in 0..jobs.min(chosen.len()).max(1) {
            s.spawn(|| loop {
                let Some(e) = queue.lock().expect("queue").pop() else {
                    return;
                };
                let t = Instant::now();
                let mut cx = experiments::Ctx::new(&args, false, quick);
                let r = (e.run)(&mut cx)
                    .map(|()| ExpData {
                        name: e.name.into(),
                        about: e.about.into(),
                        failed: cx.failed,
                        blocks: std::mem::take(&mut cx.blocks),
                        wall_s: t.elapsed().as_secs_f64(),
                    })
                    .with_context(|| format!("experiment {}", e.name));
                match (&bar, &r) {
                    (Some(b), _) => {
                        b.set_message(e.name);
                        b.inc(1);
                    }
                    (None, Ok(d)) => eprintln!(
                        "{:18} {:>7.1} s {}",
                        d.name,
                        d.wall_s,
                        if d.failed { "check FAILED" } else { "ok" }
                    ),
                    (None, Err(_)) => {}
                }
                done.lock().expect("done").push(r);
            });
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    done.into_inner().expect("done").into_iter().collect()
}

fn claims(data: &Data) -> impl Iterator<Item = &Claim> {
    data.experiments.iter().flat_map(|d| {
        d.blocks.iter().filter_map(|b| match b {
            Block::Claim(c) => Some(c),
            _ => None,
        })
    })
}

/// Measurable claims of the papers that no experiment tests yet: (paper, where,
/// claim, why not).
pub const NOT_BUILT: &[(&str, &str, &str, &str)] = &[];

/// The generated blocks' names in `template`, in order; an error on a malformed or
/// unbalanced marker.
fn parse_markers(template: &str) -> Result<Vec<String>> {
    let mut names = vec![];
    let mut open: Option<(String, usize)> = None;
    for (i, line) in template.lines().enumerate() {
        if let Some(n) = marker(line, "BEGIN") {
            if let Some((o, at)) = &open {
                bail!(
                    "EVALUATION.md line {}: block `{n}` opens inside `{o}` (opened line {at})",
                    i + 1
                );
            }
            open = Some((n, i + 1));
        } else if let Some(n) = marker(line, "END") {
            match open.take() {
                Some((o, _)) if o == n => names.push(n),
                Some((o, at)) => bail!(
                    "EVALUATION.md line {}: END of `{n}` closes `{o}` (opened line {at})",
                    i + 1
                ),
                None => bail!("EVALUATION.md line {}: END of `{n}` without its BEGIN", i + 1),
            }
        }
    }
    if let Some((o, at)) = open {
        bail!("EVALUATION.md line {at}: block `{o}` is never closed");
    }
    Ok(names)
}

/// The name in `<!-- BEGIN GENERATED name ... -->` (kind "BEGIN") or `<!-- END
/// GENERATED name -->`.
fn marker(line: &str, kind: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("<!--")?.trim_start();
    let rest = rest.strip_prefix(kind)?.trim_start().strip_prefix("GENERATED")?;
    let name = rest
        .split_whitespace()
        .next()?
        .trim_end_matches("-->")
        .trim_end_matches(':');
    (!name.is_empty()).then(|| name.to_string())
}

/// The template with every generated block rewritten from `data`.
fn render(template: &str, data: &Data) -> Result<String> {
    let mut out = String::new();
    let mut skipping = false;
    for line in template.lines() {
        if let Some(name) = marker(line, "BEGIN") {
            out.push_str(&format!(
                "<!-- BEGIN GENERATED {name}: written by `meridian report`; edits inside are lost -->\n"
            ));
            out.push_str(&block(&name, data)?);
            skipping = true;
            continue;
        }
        if let Some(name) = marker(line, "END") {
            out.push_str(&format!("<!-- END GENERATED {name} -->\n"));
            skipping = false;
            continue;
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(out)
}

fn block(name: &str, data: &Data) -> Result<String> {
    match name {
        "summary" => Ok(summary(data)),
        "timing" => Ok(timing(data)),
        _ => {
            let Some(d) = data.experiments.iter().find(|d| d.name == name) else {
                if experiments::all().iter().any(|e| e.name == name) {
                    return Ok(format!("*Not run yet: `meridian report --only {name}`.*\n"));
                }
                bail!("EVALUATION.md names a generated block `{name}`, which is no experiment");
            };
            Ok(experiment_md(d, data.quick))
        }
    }
}

fn experiment_md(d: &ExpData, quick: bool) -> String {
    let mut s = format!("Command: `meridian compare --experiment {}`", d.name);
    if quick {
        s.push_str(" (this copy was written by `meridian report --quick`: small scale, not the evaluation)");
    }
    s.push_str("\n\n");
    for b in &d.blocks {
        match b {
            Block::Text(t) => {
                for line in t.lines() {
                    s.push_str(line);
                    s.push_str("\n\n");
                }
            }
            Block::Table(t) => {
                s.push_str(&t.markdown());
                s.push('\n');
            }
            Block::Figure(f) => {
                s.push_str(&format!("![{}](figures/{}.svg)\n\n", f.title, f.file));
                let kinds: Vec<&str> = [
                    (Source::Ours, "solid lines: ours"),
                    (Source::PaperText, "dashed: the paper's values as stated in its text"),
                    (Source::PaperFigure, "dotted: read off the paper's figure (approximate)"),
                ]
                .iter()
                .filter(|(k, _)| f.series.iter().any(|x| x.source == *k))
                .map(|(_, l)| *l)
                .collect();
                let note = if f.note.is_empty() {
                    String::new()
                } else {
                    format!(" {}", f.note.trim_end())
                };
                s.push_str(&format!(
                    "*{}. {}.{} Numbers: `meridian compare --experiment {}`; figure: `meridian report --only {}`.*\n\n",
                    f.title,
                    capitalize(&kinds.join("; ")),
                    note.replace('*', "\\*"),
                    d.name,
                    d.name
                ));
            }
            Block::Claim(_) => {}
        }
    }
    let cs: Vec<&Claim> = d
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Claim(c) => Some(c),
            _ => None,
        })
        .collect();
    if !cs.is_empty() {
        s.push_str("Claims:\n\n");
        for c in cs {
            s.push_str(&format!(
                "- **{}** ({}): {}: paper {}, ours {}{}{}\n",
                c.status.label(),
                c.at,
                c.claim,
                c.paper_value,
                c.ours,
                c.ratio.map_or(String::new(), |r| format!(", ratio {r:.2}")),
                if c.cause.is_empty() {
                    String::new()
                } else {
                    format!(". {}", c.cause)
                }
            ));
        }
        s.push('\n');
    }
    s
}

fn summary(data: &Data) -> String {
    let cs: Vec<&Claim> = claims(data).collect();
    // The papers' own claims are tallied; claims about what we built beyond a paper
    // are counted apart, so they cannot lift the reproduced count.
    let count = |s: Status, beyond: bool| cs.iter().filter(|c| c.status == s && c.beyond == beyond).count();
    let papers = cs.iter().filter(|c| !c.beyond).count();
    let mut s =
        format!(
        "{} claims measured: {} reproduced, {} partly, {} not reproduced, {} not applicable; {} not built yet.{}\n\n",
        papers,
        count(Status::Reproduced, false),
        count(Status::Partly, false),
        count(Status::NotReproduced, false),
        count(Status::NotApplicable, false),
        NOT_BUILT.len(),
        if data.quick { " (A `--quick` run: small scale, not the evaluation.)" } else { "" }
    );
    let beyond = cs.len() - papers;
    if beyond > 0 {
        s.push_str(&format!(
            "Besides these, {beyond} claims test what we built beyond a paper (marked \"beyond the paper\" in the \
             status column; not in the counts above): {} reproduced, {} partly, {} not reproduced.\n\n",
            count(Status::Reproduced, true),
            count(Status::Partly, true),
            count(Status::NotReproduced, true),
        ));
    }
    s.push_str("| paper | where | claim | paper value | ours | ratio | status | cause (where not reproduced) |\n");
    s.push_str("|---|---|---|---|---|---|---|---|\n");
    let esc = |x: &str| x.replace('|', "\\|");
    for c in &cs {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.paper,
            c.at,
            esc(&c.claim),
            esc(&c.paper_value),
            esc(&c.ours),
            c.ratio.map_or("–".into(), |r| format!("{r:.2}")),
            if c.beyond {
                format!("{} (beyond the paper)", c.status.label())
            } else {
                c.status.label().into()
            },
            esc(&c.cause)
        ));
    }
    for (paper, at, claim, why) in NOT_BUILT {
        s.push_str(&format!(
            "| {paper} | {at} | {claim} | – | – | – | not built | {why} |\n"
        ));
    }
    s.push('\n');
    s
}

fn timing(data: &Data) -> String {
    let mut s = format!(
        "Last run: {} of the {} experiments in {:.1} s of wall time on {} job(s){} (the only part of this file that differs between two runs; the table gives each experiment's time when it last ran).\n\n",
        data.ran,
        data.experiments.len(),
        data.wall_s,
        data.jobs,
        if data.quick { ", quick" } else { "" }
    );
    s.push_str("| experiment | wall s | check |\n|---|---|---|\n");
    for d in &data.experiments {
        s.push_str(&format!(
            "| {} | {:.1} | {} |\n",
            d.name,
            d.wall_s,
            if d.failed { "FAIL" } else { "ok" }
        ));
    }
    s.push('\n');
    s
}

/// `s` with its first letter in capitals.
fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn variants_share_a_family_and_others_do_not() {
        assert_eq!(draw::family("hacommit, 8-core costs"), "hacommit");
        assert_eq!(draw::family("hacommit (from the decision)"), "hacommit");
        assert_eq!(draw::family("hier-lock b10"), "hier-lock");
        assert_eq!(draw::family("hier-ts b50"), "hier-ts");
        assert_eq!(draw::family("replog V/O/I"), "replog V/O/I");
        assert_eq!(draw::family("rc"), "rc");
        assert_eq!(draw::family("2pc-2pl:copies=2 (flat), 1 ops/DC"), "2pc-2pl:copies=2");
        assert_ne!(draw::family("rc commit"), draw::family("rc transaction"));
    }

    use super::*;
    use crate::experiments::Figure;

    #[test]
    fn every_simulated_experiment_has_a_block_in_evaluation_md() {
        let names = parse_markers(TEMPLATE).expect("markers parse");
        for e in experiments::all().into_iter().filter(|e| e.sim) {
            assert!(
                names.iter().any(|n| n == e.name),
                "docs/EVALUATION.md has no block for {}",
                e.name
            );
        }
        for n in &names {
            assert!(
                n == "summary" || n == "timing" || experiments::all().iter().any(|e| e.name == n),
                "docs/EVALUATION.md names an unknown block {n}"
            );
        }
        assert!(names.iter().any(|n| n == "summary"));
    }

    /// Issue 54: a claim about what we built beyond a paper (pipelined validation)
    /// is counted apart, never in the papers' reproduced tally.
    #[test]
    fn claims_beyond_a_paper_are_counted_apart() {
        let paper = Claim::shape("p.md", "Fig. 1", "a", "yes", "yes".into(), true, "");
        let ours = Claim::shape("p.md", "§4", "b", "yes", "yes".into(), true, "").beyond_paper();
        let data = Data {
            experiments: vec![ExpData {
                name: "x".into(),
                about: String::new(),
                blocks: vec![Block::Claim(paper), Block::Claim(ours)],
                failed: false,
                wall_s: 0.0,
            }],
            ..Data::default()
        };
        let s = summary(&data);
        assert!(s.starts_with("1 claims measured: 1 reproduced"), "{s}");
        assert!(
            s.contains("Besides these, 1 claims test what we built beyond a paper"),
            "{s}"
        );
        assert!(s.contains("| reproduced (beyond the paper) |"), "{s}");
    }

    #[test]
    fn malformed_markers_get_one_clear_error() {
        let e = parse_markers("<!-- BEGIN GENERATED a -->\n<!-- END GENERATED b -->\n").unwrap_err();
        assert!(e.to_string().contains("closes `a`"), "{e}");
        let e = parse_markers("<!-- BEGIN GENERATED a -->\n").unwrap_err();
        assert!(e.to_string().contains("never closed"), "{e}");
        let e = parse_markers("<!-- END GENERATED a -->\n").unwrap_err();
        assert!(e.to_string().contains("without its BEGIN"), "{e}");
    }

    #[test]
    fn render_keeps_prose_and_rewrites_blocks() {
        let t = "prose\n<!-- BEGIN GENERATED timing -->\nold\n<!-- END GENERATED timing -->\nmore prose\n";
        let d = Data {
            wall_s: 1.0,
            jobs: 2,
            ..Data::default()
        };
        let out = render(t, &d).expect("render");
        assert!(out.starts_with("prose\n<!-- BEGIN GENERATED timing"));
        assert!(!out.contains("old"));
        assert!(out.ends_with("<!-- END GENERATED timing -->\nmore prose\n"));
        assert_eq!(render(&out, &d).expect("render"), out, "rendering is a fixed point");
    }

    #[test]
    fn a_gap_survives_the_data_file() {
        let f = Figure::new("g", "t", "x", "y").ours("s", vec![(1.0, 2.0), (2.0, f64::NAN), (3.0, 4.0)]);
        let d = Data {
            experiments: vec![ExpData {
                name: "e".into(),
                about: String::new(),
                blocks: vec![Block::Figure(f)],
                failed: false,
                wall_s: 0.0,
            }],
            ..Data::default()
        };
        let json = serde_json::to_string(&d).expect("serializes");
        assert!(json.contains("null"), "{json}");
        let back: Data = serde_json::from_str(&json).expect("parses back");
        let Block::Figure(g) = &back.experiments[0].blocks[0] else {
            panic!("a figure")
        };
        assert_eq!(g.series[0].points[0], (1.0, 2.0));
        assert!(g.series[0].points[1].1.is_nan());
    }

    #[test]
    fn only_names_papers_or_experiments() {
        assert!(select(Some("rc"))
            .expect("rc")
            .iter()
            .all(|e| e.name.starts_with("rc-")));
        assert_eq!(select(Some("rc-fig3,rc-fig3")).expect("one").len(), 1);
        let e = select(Some("rc-fig99")).err().expect("an error").to_string();
        assert!(e.contains("unknown experiment or paper `rc-fig99`"), "{e}");
    }
}
