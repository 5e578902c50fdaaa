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

use crate::experiments::{self, Block, Claim, Experiment, Figure, Source, Status};
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

/// The template built into the binary (used when OUT has no EVALUATION.md).
const TEMPLATE: &str = include_str!("../../../docs/EVALUATION.md");

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
    let claims: Vec<&Claim> = claims(&data).collect();
    let count = |s: Status| claims.iter().filter(|c| c.status == s).count();
    println!(
        "{} experiments in {:.1} s on {jobs} job(s){}; {} claims: {} reproduced, {} partly, {} not reproduced; wrote {}, {} and {}",
        ran.len(),
        wall_s,
        if a.quick { " (quick)" } else { "" },
        claims.len(),
        count(Status::Reproduced),
        count(Status::Partly),
        count(Status::NotReproduced),
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
                s.push_str(&format!(
                    "*{}. {}. Numbers: `meridian compare --experiment {}`; figure: `meridian report --only {}`.*\n\n",
                    f.title,
                    capitalize(&kinds.join("; ")),
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
    let count = |s: Status| cs.iter().filter(|c| c.status == s).count();
    let mut s =
        format!(
        "{} claims measured: {} reproduced, {} partly, {} not reproduced, {} not applicable; {} not built yet.{}\n\n",
        cs.len(),
        count(Status::Reproduced),
        count(Status::Partly),
        count(Status::NotReproduced),
        count(Status::NotApplicable),
        NOT_BUILT.len(),
        if data.quick { " (A `--quick` run: small scale, not the evaluation.)" } else { "" }
    );
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
            c.status.label(),
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

/// Draws `f` as an SVG line chart: our series solid with dots, the paper's dashed
/// (stated) or dotted (read off a figure) with crosses.
fn draw(f: &Figure, experiment: &str, path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let pts = || {
        f.series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!f.log_y || *y > 0.0))
    };
    if pts().next().is_none() {
        bail!("figure {} has no finite points", f.file);
    }
    let categorical = !f.categories.is_empty();
    let (mut x0, mut x1) = pts().fold((f64::MAX, f64::MIN), |(a, b), (x, _)| (a.min(x), b.max(x)));
    let (mut y0, mut y1) = pts().fold((f64::MAX, f64::MIN), |(a, b), (_, y)| (a.min(y), b.max(y)));
    if categorical {
        x0 = -0.5;
        x1 = f.categories.len() as f64 - 0.5;
    } else {
        let pad = ((x1 - x0) * 0.04).max(if x1 == x0 { 1.0 } else { 0.0 });
        x0 -= pad;
        x1 += pad;
    }
    if f.log_y {
        // From a power of ten: plotters labels no tick in a partial lowest decade.
        y0 = 10f64.powf((y0 / 1.5).log10().floor());
        y1 *= 1.5;
    } else {
        // From zero, with a little room below so a series at 0 is not hidden by the
        // axis line.
        y0 = y0.min(0.0);
        y1 = if y1 <= y0 { y0 + 1.0 } else { y1 + (y1 - y0) * 0.08 };
        y0 -= (y1 - y0) * 0.015;
    }
    let root = SVGBackend::new(path, (960, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, foot) = root.split_vertically(430);
    let (chart_area, legend_area) = top.split_horizontally(700);
    foot.draw(&Text::new(
        format!("meridian report --only {experiment}"),
        (10, 8),
        ("sans-serif", 13).into_font().color(&RGBColor(90, 90, 90)),
    ))?;
    let palette = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(255, 127, 14),
        RGBColor(140, 86, 75),
        RGBColor(23, 190, 207),
        RGBColor(127, 127, 127),
    ];
    // Who is drawn how: measured series each get a colour and a marker shape (so two
    // series that coincide stay visible); a paper series takes the colour of the
    // measured series it belongs to (`of`, else the longest common name prefix),
    // else a spare colour, and is drawn dashed with crosses.
    let ours: Vec<&str> = f
        .series
        .iter()
        .filter(|s| s.source == Source::Ours)
        .map(|s| s.name.as_str())
        .collect();
    let mut spare = palette.len();
    let mut styled: Vec<(&experiments::Series, RGBColor, usize)> = vec![];
    // Variants of one series share its hue, each later one a lighter shade (and its
    // own marker shape): see `family`.
    let mut families: Vec<(&str, RGBColor, usize)> = vec![];
    for s in f.series.iter().filter(|s| s.source == Source::Ours) {
        let i = styled.len();
        let fam = family(&s.name);
        let color = match families.iter_mut().find(|(n, _, _)| *n == fam) {
            Some((_, base, members)) => {
                *members += 1;
                lighter(*base, (0.3 * (*members - 1) as f64).min(0.6))
            }
            None => {
                let base = palette[families.len() % palette.len()];
                families.push((fam, base, 1));
                base
            }
        };
        styled.push((s, color, i));
    }
    for s in f.series.iter().filter(|s| s.source != Source::Ours) {
        let want = bare(&s.name).to_lowercase();
        let hit = match &s.of {
            Some(o) => ours.iter().position(|n| n == o),
            None => ours
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let n = n.to_lowercase();
                    (i, want.chars().zip(n.chars()).take_while(|(a, b)| a == b).count())
                })
                .filter(|(_, k)| *k >= 2)
                .max_by_key(|(i, k)| (*k, usize::MAX - i))
                .map(|(i, _)| i),
        };
        let color = match hit {
            Some(i) => styled[i].1,
            None => {
                spare = if spare == 0 { palette.len() - 1 } else { spare - 1 };
                palette[spare]
            }
        };
        styled.push((s, color, 0));
    }
    // Integer quantities (counts, operations) get labels on integers only.
    let int_x = !categorical && f.series.iter().all(|s| s.points.iter().all(|(x, _)| x.fract() == 0.0));
    let int_y = !f.log_y
        && f.series
            .iter()
            .all(|s| s.points.iter().all(|(_, y)| !y.is_finite() || y.fract() == 0.0));
    let cats = f.categories.clone();
    let int_axis = |v: f64| {
        if (v - v.round()).abs() < 1e-9 {
            num(v)
        } else {
            String::new()
        }
    };
    let xfmt = move |x: &f64| -> String {
        if cats.is_empty() {
            if int_x {
                int_axis(*x)
            } else {
                num(*x)
            }
        } else {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < cats.len() {
                cats[i as usize].clone()
            } else {
                String::new()
            }
        }
    };
    let log_y = f.log_y;
    let yfmt = move |y: &f64| {
        if log_y {
            // 1, 2 and 5 of each decade; the other ticks stay as grid lines.
            let m = y / 10f64.powf(y.log10().floor());
            if [1.0, 2.0, 5.0].iter().any(|k| (m - k).abs() < 1e-6) || (m - 10.0).abs() < 1e-6 {
                num(*y)
            } else {
                String::new()
            }
        } else if int_y {
            int_axis(*y)
        } else {
            num(*y)
        }
    };
    let mut b = ChartBuilder::on(&chart_area);
    b.caption(&f.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    let mut legend: Vec<(String, RGBColor, usize, bool)> = vec![];
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(f.x.as_str())
                .y_desc(f.y.as_str())
                .x_label_formatter(&xfmt)
                .y_label_formatter(&yfmt)
                .light_line_style(RGBColor(238, 238, 238));
            if categorical {
                mesh.x_labels(f.categories.len() + 1);
            }
            if f.log_y {
                // Labels at 1, 2, 5 (and more) of each decade, not only its powers.
                mesh.y_labels(20);
            }
            mesh.draw()?;
            // Marked events and intervals, under the data.
            let (lo, hi) = (y0, y1);
            for (a, z, label) in &f.marks {
                let grey = RGBColor(150, 150, 150);
                if z > a {
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(*a, lo), (*z, hi)],
                        RGBColor(200, 200, 200).mix(0.35).filled(),
                    )))?;
                } else {
                    chart.draw_series(DashedLineSeries::new(
                        vec![(*a, lo), (*a, hi)],
                        4u32,
                        3u32,
                        ShapeStyle::from(&grey).stroke_width(1),
                    ))?;
                }
                chart.draw_series(std::iter::once(Text::new(
                    label.clone(),
                    (*a, hi),
                    ("sans-serif", 12).into_font().color(&RGBColor(90, 90, 90)),
                )))?;
            }
            for (s, color, shape) in &styled {
                let style = ShapeStyle::from(color).stroke_width(2);
                let thin = ShapeStyle::from(color).stroke_width(1);
                // Runs of drawable points; a non-finite y (or 0 on a log axis) breaks
                // the line.
                let mut runs: Vec<Vec<(f64, f64)>> = vec![vec![]];
                for &(x, y) in &s.points {
                    if x.is_finite() && y.is_finite() && (!f.log_y || y > 0.0) {
                        runs.last_mut().expect("a run").push((x, y));
                    } else if !runs.last().expect("a run").is_empty() {
                        runs.push(vec![]);
                    }
                }
                let all: Vec<(f64, f64)> = runs.iter().flatten().copied().collect();
                let ours = s.source == Source::Ours;
                let gap: u32 = if s.source == Source::PaperText { 5 } else { 2 };
                // Categorical x: markers only (a line between categories suggests a
                // trend that is not there); a scatter has no lines either.
                if !categorical && !f.scatter {
                    for r in runs.iter().filter(|r| r.len() > 1) {
                        if ours {
                            chart.draw_series(LineSeries::new(r.clone(), style))?;
                        } else {
                            chart.draw_series(DashedLineSeries::new(r.clone(), 5u32, gap, thin))?;
                        }
                    }
                }
                if ours {
                    for &q in &all {
                        marker(&mut chart, q, *shape, *color)?;
                    }
                    legend.push((s.name.clone(), *color, *shape, true));
                } else {
                    chart.draw_series(all.iter().map(|&q| Cross::new(q, 6, style)))?;
                    let label = if s.source == Source::PaperText {
                        format!("paper: {}", bare(&s.name))
                    } else {
                        format!("paper (read off fig.): {}", bare(&s.name))
                    };
                    legend.push((label, *color, gap as usize, false));
                }
            }
        }};
    }
    /// Marker `shape` (0 filled circle, 1 triangle, 2 hollow square, 3 hollow circle,
    /// 4 diamond) at `q`.
    fn marker<DB: DrawingBackend, CT: plotters::coord::CoordTranslate<From = (f64, f64)>>(
        chart: &mut ChartContext<'_, DB, CT>,
        q: (f64, f64),
        shape: usize,
        color: RGBColor,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let s2 = ShapeStyle::from(&color).stroke_width(2);
        let r = match shape % 5 {
            0 => chart
                .draw_series(std::iter::once(Circle::new(q, 4, color.filled())))
                .map(|_| ()),
            1 => chart
                .draw_series(std::iter::once(TriangleMarker::new(q, 6, color.filled())))
                .map(|_| ()),
            2 => chart
                .draw_series(std::iter::once(
                    EmptyElement::at(q) + Rectangle::new([(-5, -5), (5, 5)], s2),
                ))
                .map(|_| ()),
            3 => chart.draw_series(std::iter::once(Circle::new(q, 7, s2))).map(|_| ()),
            _ => chart
                .draw_series(std::iter::once(
                    EmptyElement::at(q) + Polygon::new(vec![(0, -6), (6, 0), (0, 6), (-6, 0)], color.filled()),
                ))
                .map(|_| ()),
        };
        r.map_err(|e| anyhow::anyhow!("{e}"))
    }
    if f.log_y {
        body!(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?);
    } else {
        body!(b.build_cartesian_2d(x0..x1, y0..y1)?);
    }
    // The legend, beside the plot so it never hides a point; long labels wrap.
    let mut y = 50i32;
    for (label, color, shape_or_gap, ours) in &legend {
        let style = ShapeStyle::from(color).stroke_width(2);
        if *ours {
            if !categorical {
                legend_area.draw(&PathElement::new(vec![(6, y), (34, y)], style))?;
            }
            let q = (20, y);
            match shape_or_gap % 5 {
                0 => legend_area.draw(&Circle::new(q, 4, color.filled()))?,
                1 => legend_area.draw(&TriangleMarker::new(q, 6, color.filled()))?,
                2 => legend_area.draw(&Rectangle::new([(15, y - 5), (25, y + 5)], style))?,
                3 => legend_area.draw(&Circle::new(q, 7, style))?,
                _ => legend_area.draw(&Polygon::new(
                    vec![(20, y - 6), (26, y), (20, y + 6), (14, y)],
                    color.filled(),
                ))?,
            }
        } else {
            if !categorical {
                legend_area.draw(&plotters::element::DashedPathElement::new(
                    vec![(6, y), (34, y)],
                    5,
                    *shape_or_gap as u32,
                    style.stroke_width(1),
                ))?;
            }
            legend_area.draw(&Cross::new((20, y), 5, style))?;
        }
        for (k, line) in wrap(label, 30).iter().enumerate() {
            legend_area.draw(&Text::new(
                line.clone(),
                (42, y - 7 + 15 * k as i32),
                ("sans-serif", 13).into_font().color(&RGBColor(40, 40, 40)),
            ))?;
            if k > 0 {
                y += 15;
            }
        }
        y += 24;
    }
    root.present()?;
    Ok(())
}

/// A tick label: no trailing zeros, thousands grouped, at most 3 significant decimals.
fn num(x: f64) -> String {
    if !x.is_finite() {
        return String::new();
    }
    let a = x.abs();
    let s = if a >= 100.0 || x.fract().abs() < 1e-9 {
        format!("{:.0}", x)
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    // Group the integer part's thousands with a thin space.
    let (sign, rest) = s.strip_prefix('-').map_or(("", s.as_str()), |r| ("-", r));
    let (int, frac) = rest.split_once('.').map_or((rest, None), |(i, f)| (i, Some(f)));
    if int.len() <= 4 {
        return s.clone();
    }
    let mut g = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            g.push('\u{2009}');
        }
        g.push(c);
    }
    format!("{sign}{g}{}", frac.map_or(String::new(), |f| format!(".{f}")))
}

/// `s` with its first letter in capitals.
fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// The family a measured series belongs to, for its colour: the name before its
/// first ", " or " (", without a trailing batch-size word (`b10`). So "hacommit, 8-core
/// costs" joins "hacommit (from the decision)", and "hier-lock b10" joins "hier-lock
/// b1", while "rc" and "replog" stay apart.
fn family(name: &str) -> &str {
    let cut = [", ", " ("]
        .iter()
        .filter_map(|p| name.find(p))
        .min()
        .unwrap_or(name.len());
    let head = name[..cut].trim();
    match head.rsplit_once(' ') {
        Some((rest, last))
            if last.len() > 1 && last.starts_with('b') && last[1..].chars().all(|c| c.is_ascii_digit()) =>
        {
            rest.trim()
        }
        _ => head,
    }
}

/// `c` mixed with white by `t` (0: unchanged, 1: white).
fn lighter(c: plotters::style::RGBColor, t: f64) -> plotters::style::RGBColor {
    let mix = |x: u8| (x as f64 + (255.0 - x as f64) * t).round() as u8;
    plotters::style::RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// A series name without a leading "paper" (the legend adds it).
fn bare(name: &str) -> &str {
    let n = name.trim();
    for p in ["paper:", "paper", "Paper:", "Paper"] {
        if let Some(r) = n.strip_prefix(p) {
            if r.starts_with([' ', ':']) || p.ends_with(':') {
                return r.trim_start_matches(':').trim();
            }
        }
    }
    n
}

/// `s` cut into lines of at most `width` characters at spaces.
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    for w in s.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + w.chars().count() <= width => {
                l.push(' ');
                l.push_str(w);
            }
            _ => lines.push(w.to_string()),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    #[test]
    fn variants_share_a_family_and_others_do_not() {
        assert_eq!(super::family("hacommit, 8-core costs"), "hacommit");
        assert_eq!(super::family("hacommit (from the decision)"), "hacommit");
        assert_eq!(super::family("hier-lock b10"), "hier-lock");
        assert_eq!(super::family("hier-ts b50"), "hier-ts");
        assert_eq!(super::family("replog V/O/I"), "replog V/O/I");
        assert_eq!(super::family("rc"), "rc");
        assert_eq!(super::family("2pc-2pl:copies=2 (flat), 1 ops/DC"), "2pc-2pl:copies=2");
        assert_ne!(super::family("rc commit"), super::family("rc transaction"));
    }

    use super::*;

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
