//! Drawing a report's figures: each [`Figure`] as an SVG line chart (plotters), our
//! series solid, the paper's dashed or dotted, one colour per protocol family.

use crate::experiments::{self, Figure, Source};
use anyhow::{bail, Result};
use std::path::Path;

/// Width of a figure, in pixels.
const WIDTH: u32 = 960;
/// Height of the chart (the plot, its title and axes), in pixels.
const CHART_H: u32 = 400;
/// Legend columns under the chart, and the characters a legend line holds.
const LEGEND_COLS: usize = 3;
const LEGEND_WRAP: usize = 44;
/// Characters a line of the note holds.
const NOTE_WRAP: usize = 135;
/// Pixels a series is raised by for each earlier series it coincides with.
const RAISE_PX: f64 = 4.0;

/// One legend entry: its lines (wrapped), colour, marker shape or dash gap, and
/// whether it is ours.
struct Entry {
    lines: Vec<String>,
    color: plotters::style::RGBColor,
    shape_or_gap: usize,
    ours: bool,
}

/// The legend label of `f`'s series `i`: its name, "paper: NAME" or "paper (read off
/// fig.): NAME", and for a measured series drawn raised because it coincides with an
/// earlier one, which one.
pub(super) fn legend_label(f: &Figure, i: usize) -> String {
    let s = &f.series[i];
    match s.source {
        Source::Ours => match coincides_with(f, i) {
            Some(j) => format!("{} (same values as {}; drawn raised)", s.name, f.series[j].name),
            None => s.name.clone(),
        },
        Source::PaperText => format!("paper: {}", bare(&s.name)),
        Source::PaperFigure => format!("paper (read off fig.): {}", bare(&s.name)),
    }
}

/// The legend label's lines as drawn.
pub(super) fn legend_lines(f: &Figure, i: usize) -> Vec<String> {
    wrap(&legend_label(f, i), LEGEND_WRAP)
}

/// The nearest earlier measured series that measured series `i` coincides with: the
/// same x values and every drawable y within 0.5% of the figure's y span (on a log
/// axis, within 1% of each other; a point not drawn there must not be drawn here
/// either), so that drawing it would hide the other. The nearest, so that three equal
/// series form a chain, each raised a step above the one before.
fn coincides_with(f: &Figure, i: usize) -> Option<usize> {
    let s = &f.series[i];
    let drawn = |y: f64| y.is_finite() && (!f.log_y || y > 0.0);
    if s.source != Source::Ours || !s.points.iter().any(|p| drawn(p.1)) {
        return None;
    }
    let ys = f
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite());
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    let tol = ((hi - lo) * 0.005).max(1e-9);
    (0..i).rev().find(|&j| {
        let o = &f.series[j];
        o.source == Source::Ours
            && o.points.len() == s.points.len()
            && o.points.iter().zip(&s.points).all(|(a, b)| {
                let (ya, yb) = (a.1, b.1);
                a.0 == b.0
                    && match (drawn(ya), drawn(yb)) {
                        (false, false) => true,
                        (true, true) if f.log_y => (ya / yb - 1.0).abs() <= 0.01,
                        (true, true) => (ya - yb).abs() <= tol,
                        _ => false,
                    }
            })
    })
}

/// How many earlier measured series `i` coincides with in a chain (each raised one step
/// more than the one it hides).
fn raise_steps(f: &Figure, i: usize) -> usize {
    let mut k = 0;
    let mut at = i;
    while let Some(j) = coincides_with(f, at) {
        k += 1;
        at = j;
    }
    k
}

/// Draws `f` as an SVG chart: our series solid with markers, the paper's dashed
/// (stated) or dotted (read off a figure) with crosses; the legend under the chart in
/// columns, then the note, then the command that draws it.
pub(super) fn draw(f: &Figure, experiment: &str, path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let half = f.windows.unwrap_or(0.0) / 2.0;
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
    let (mut x0, mut x1) = pts().fold((f64::MAX, f64::MIN), |(a, b), (x, _)| {
        (a.min(x - half), b.max(x + half))
    });
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
        // From a power of ten, so the lowest decade is whole and labelled.
        y0 = 10f64.powf((y0 / 1.5).log10().floor());
        y1 *= 1.5;
    } else {
        // From zero, with a little room below so a series at 0 is not hidden by the
        // axis line.
        y0 = y0.min(0.0);
        y1 = if y1 <= y0 { y0 + 1.0 } else { y1 + (y1 - y0) * 0.08 };
        y0 -= (y1 - y0) * 0.015;
    }
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
    // (series index, colour, marker shape)
    let mut styled: Vec<(usize, RGBColor, usize)> = vec![];
    // Each series' place beside a category on a categorical axis (see `dodge`): ours
    // in order, a paper series at its measured series' place, else a place of its own.
    let mut slot: Vec<usize> = vec![0; f.series.len()];
    // Variants of one series share its hue, each later one a lighter shade (and its
    // own marker shape): see `family`.
    let mut families: Vec<(&str, RGBColor, usize)> = vec![];
    for (i, s) in f.series.iter().enumerate().filter(|(_, s)| s.source == Source::Ours) {
        let shape = styled.len();
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
        slot[i] = styled.len();
        styled.push((i, color, shape));
    }
    let mut slots = styled.len();
    for (i, s) in f.series.iter().enumerate().filter(|(_, s)| s.source != Source::Ours) {
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
        // A shade darker than its measured series, so a paper line lying exactly on
        // ours (a reproduced value) still shows on top of it.
        let color = match hit {
            Some(k) => darker(styled[k].1, 0.35),
            None => {
                spare = if spare == 0 { palette.len() - 1 } else { spare - 1 };
                palette[spare]
            }
        };
        slot[i] = match hit {
            Some(k) => slot[styled[k].0],
            None => {
                slots += 1;
                slots - 1
            }
        };
        styled.push((i, color, 0));
    }
    let gap_of = |s: &experiments::Series| -> u32 {
        if s.source == Source::PaperText {
            5
        } else {
            2
        }
    };
    let legend: Vec<Entry> = styled
        .iter()
        .map(|&(i, color, shape)| {
            let s = &f.series[i];
            let ours = s.source == Source::Ours;
            Entry {
                lines: legend_lines(f, i),
                color,
                shape_or_gap: if ours { shape } else { gap_of(s) as usize },
                ours,
            }
        })
        .collect();
    // The height under the chart: legend rows (each as tall as its longest entry),
    // then the note, then the footer line.
    let rows: Vec<i32> = legend
        .chunks(LEGEND_COLS)
        .map(|row| row.iter().map(|e| 15 * e.lines.len() as i32 + 9).max().unwrap_or(0))
        .collect();
    let legend_h: i32 = rows.iter().sum::<i32>() + 6;
    let note = if f.note.is_empty() {
        vec![]
    } else {
        wrap(&f.note, NOTE_WRAP)
    };
    let note_h = if note.is_empty() { 0 } else { 16 * note.len() as i32 + 8 };
    let height = CHART_H + legend_h as u32 + note_h as u32 + 26;
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (chart_area, below) = root.split_vertically(CHART_H);
    let (legend_area, rest) = below.split_vertically(legend_h);
    let (note_area, foot) = rest.split_vertically(note_h);
    foot.draw(&Text::new(
        format!("meridian report --only {experiment}"),
        (10, 6),
        ("sans-serif", 13).into_font().color(&RGBColor(90, 90, 90)),
    ))?;
    for (k, line) in note.iter().enumerate() {
        note_area.draw(&Text::new(
            line.clone(),
            (10, 2 + 16 * k as i32),
            ("sans-serif", 13)
                .into_font()
                .style(FontStyle::Italic)
                .color(&RGBColor(70, 70, 70)),
        ))?;
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
    let yfmt = move |y: &f64| {
        if int_y {
            int_axis(*y)
        } else {
            num(*y)
        }
    };
    let mut b = ChartBuilder::on(&chart_area);
    b.caption(&f.title, ("sans-serif", 18))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(70);
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
            mesh.draw()?;
            // A series raised by `k` steps: `k` times RAISE_PX in data units.
            let plot_h = chart.plotting_area().dim_in_pixel().1.max(1) as f64;
            let raise = |y: f64, k: usize| -> f64 {
                if k == 0 {
                    y
                } else if f.log_y {
                    y * 10f64.powf(k as f64 * RAISE_PX * (y1.log10() - y0.log10()) / plot_h)
                } else {
                    y + k as f64 * RAISE_PX * (y1 - y0) / plot_h
                }
            };
            // Marked events and intervals, under the data. A label that would run into
            // the one before it (about 7 px a character) goes a line lower.
            let (lo, hi) = (y0, y1);
            let px_per_x = chart.plotting_area().dim_in_pixel().0.max(1) as f64 / (x1 - x0);
            let mut label_rows: Vec<f64> = vec![];
            for (a, z, label) in &f.marks {
                let left = (a - x0) * px_per_x;
                let row = label_rows
                    .iter()
                    .position(|end| *end <= left)
                    .unwrap_or(label_rows.len());
                if row == label_rows.len() {
                    label_rows.push(0.0);
                }
                label_rows[row] = left + 7.0 * label.chars().count() as f64;
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
                chart.draw_series(std::iter::once(
                    EmptyElement::at((*a, hi))
                        + Text::new(
                            label.clone(),
                            (0, 14 * row as i32),
                            ("sans-serif", 12).into_font().color(&RGBColor(90, 90, 90)),
                        ),
                ))?;
            }
            // On a categorical axis each measured series is drawn a little to the side of
            // the category (dodged), so equal values do not hide each other; a paper
            // series at its measured series' place.
            let n = slots as f64;
            for &(i, color, shape) in &styled {
                let s = &f.series[i];
                let k = raise_steps(f, i);
                let dodge = if categorical && n > 1.0 {
                    (slot[i] as f64 - (n - 1.0) / 2.0) * (0.5 / n).min(0.1)
                } else {
                    0.0
                };
                let style = ShapeStyle::from(color).stroke_width(2);
                let thin = ShapeStyle::from(color).stroke_width(1);
                // Runs of drawable points; a non-finite y (or 0 on a log axis) breaks
                // the line.
                let mut runs: Vec<Vec<(f64, f64)>> = vec![vec![]];
                for &(x, y) in &s.points {
                    if x.is_finite() && y.is_finite() && (!f.log_y || y > 0.0) {
                        runs.last_mut().expect("a run").push((x + dodge, raise(y, k)));
                    } else if !runs.last().expect("a run").is_empty() {
                        runs.push(vec![]);
                    }
                }
                let all: Vec<(f64, f64)> = runs.iter().flatten().copied().collect();
                let ours = s.source == Source::Ours;
                let gap = gap_of(s);
                if f.windows.is_some() {
                    // A level across each window, never joined to the next.
                    for &(x, y) in &all {
                        let seg = vec![(x - half, y), (x + half, y)];
                        if ours {
                            chart.draw_series(LineSeries::new(seg, style))?;
                        } else {
                            chart.draw_series(DashedLineSeries::new(seg, 5u32, gap, thin))?;
                        }
                    }
                } else if !categorical && !f.scatter {
                    // Categorical x: markers only (a line between categories suggests
                    // a trend that is not there); a scatter has no lines either.
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
                        marker(&mut chart, q, shape, color)?;
                    }
                } else {
                    chart.draw_series(all.iter().map(|&q| Cross::new(q, 6, style)))?;
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
        // Labels at 1, 2 and 5 of each decade and grid lines at every integer multiple,
        // each tick once (plotters' own log ticks drew each power of ten twice).
        let (bold, light) = log_ticks(y0, y1);
        body!(b.build_cartesian_2d(
            x0..x1,
            (y0..y1).log_scale().with_key_points(bold).with_light_points(light)
        )?);
    } else {
        body!(b.build_cartesian_2d(x0..x1, y0..y1)?);
    }
    // The legend, under the plot so it never hides a point nor narrows it.
    let col_w = WIDTH as i32 / LEGEND_COLS as i32;
    let mut y = 10i32;
    for (row, h) in legend.chunks(LEGEND_COLS).zip(&rows) {
        for (c, e) in row.iter().enumerate() {
            let x = 10 + c as i32 * col_w;
            let style = ShapeStyle::from(e.color).stroke_width(2);
            let q = (x + 14, y);
            if e.ours {
                if !categorical && !f.scatter {
                    legend_area.draw(&PathElement::new(vec![(x, y), (x + 28, y)], style))?;
                }
                match e.shape_or_gap % 5 {
                    0 => legend_area.draw(&Circle::new(q, 4, e.color.filled()))?,
                    1 => legend_area.draw(&TriangleMarker::new(q, 6, e.color.filled()))?,
                    2 => legend_area.draw(&Rectangle::new([(q.0 - 5, y - 5), (q.0 + 5, y + 5)], style))?,
                    3 => legend_area.draw(&Circle::new(q, 7, style))?,
                    _ => legend_area.draw(&Polygon::new(
                        vec![(q.0, y - 6), (q.0 + 6, y), (q.0, y + 6), (q.0 - 6, y)],
                        e.color.filled(),
                    ))?,
                }
            } else {
                if !categorical && !f.scatter {
                    legend_area.draw(&plotters::element::DashedPathElement::new(
                        vec![(x, y), (x + 28, y)],
                        5,
                        e.shape_or_gap as u32,
                        style.stroke_width(1),
                    ))?;
                }
                legend_area.draw(&Cross::new(q, 5, style))?;
            }
            for (k, line) in e.lines.iter().enumerate() {
                legend_area.draw(&Text::new(
                    line.clone(),
                    (x + 36, y - 7 + 15 * k as i32),
                    ("sans-serif", 13).into_font().color(&RGBColor(40, 40, 40)),
                ))?;
            }
        }
        y += h;
    }
    root.present()?;
    Ok(())
}

/// A log axis's ticks over [lo, hi]: labelled ones at 1, 2 and 5 of each decade, grid
/// lines at every integer multiple of each decade's power (none twice).
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut bold, mut light) = (vec![], vec![]);
    let mut p = 10f64.powf(lo.log10().floor());
    while p <= hi {
        for m in 1..10 {
            let v = p * m as f64;
            if v < lo * (1.0 - 1e-9) || v > hi * (1.0 + 1e-9) {
                continue;
            }
            if [1, 2, 5].contains(&m) {
                bold.push(v);
            } else {
                light.push(v);
            }
        }
        p *= 10.0;
    }
    (bold, light)
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

/// The family a measured series belongs to, for its colour: the name before its
/// first ", " or " (", without a trailing batch-size word (`b10`). So "hacommit, 8-core
/// costs" joins "hacommit (from the decision)", and "hier-lock b10" joins "hier-lock
/// b1", while "rc" and "replog" stay apart.
pub(super) fn family(name: &str) -> &str {
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

/// `c` mixed with black by `t` (0: unchanged, 1: black).
fn darker(c: plotters::style::RGBColor, t: f64) -> plotters::style::RGBColor {
    let mix = |x: u8| (x as f64 * (1.0 - t)).round() as u8;
    plotters::style::RGBColor(mix(c.0), mix(c.1), mix(c.2))
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
    use super::*;
    use crate::experiments::Block;
    use crate::report::Data;

    /// The text of every `<text>` element of the SVG at `path` (which must parse).
    fn texts(path: &Path) -> Vec<String> {
        let svg = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| {
                n.children()
                    .filter_map(|t| t.text())
                    .collect::<String>()
                    .trim()
                    .to_string()
            })
            .collect()
    }

    /// The points of every `<polyline>` of `colour` (e.g. `#1F77B4`) in the SVG at
    /// `path`, in pixels, in drawing order.
    fn polylines(path: &Path, colour: &str) -> Vec<Vec<(i32, i32)>> {
        let svg = std::fs::read_to_string(path).expect("read");
        let doc = roxmltree::Document::parse(&svg).expect("parses");
        doc.descendants()
            .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some(colour))
            .filter_map(|n| n.attribute("points"))
            .map(|p| {
                p.split_whitespace()
                    .filter_map(|xy| xy.split_once(','))
                    .map(|(x, y)| (x.parse().expect("x"), y.parse().expect("y")))
                    .collect()
            })
            .collect()
    }

    /// Each series of `f` is in the legend of its drawing (the first line of its label).
    fn assert_legend(f: &Figure, texts: &[String]) {
        for i in 0..f.series.len() {
            let first = &legend_lines(f, i)[0];
            assert!(
                texts.iter().any(|t| t == first),
                "{}: no legend entry `{first}` for series {:?}",
                f.file,
                f.series[i].name
            );
        }
    }

    /// Issue 59: on a log axis plotters drew each power of ten twice (and grey bands
    /// of grid lines beside it); a series equal to an earlier one hid it; both are
    /// drawn now, the hidden one raised and named so in the legend.
    #[test]
    fn log_ticks_are_labelled_once_and_a_series_equal_to_another_stays_visible() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.svg");
        // x far from the y ticks' labels, so each label below is a y tick.
        let pts = vec![(1000.0, 0.3), (2000.0, 3.0), (3000.0, 30.0), (4000.0, 300.0)];
        let f = Figure::new("f", "a log chart", "x", "y")
            .log_y()
            .ours("first", pts.clone())
            .ours("second", pts.clone())
            .paper("paper: first", Source::PaperText, vec![(4000.0, 200.0)]);
        draw(&f, "e", &path).expect("draws");
        let t = texts(&path);
        for label in ["0.1", "0.2", "1", "10", "100", "200"] {
            assert_eq!(t.iter().filter(|x| *x == label).count(), 1, "tick {label} in {t:?}");
        }
        assert_eq!(coincides_with(&f, 1), Some(0));
        assert_eq!(raise_steps(&f, 1), 1);
        assert!(
            legend_label(&f, 1).contains("same values as first"),
            "{}",
            legend_label(&f, 1)
        );
        assert_legend(&f, &t);
        // The second is drawn above the first (a smaller pixel y), not on it.
        let (a, b) = (&polylines(&path, "#1F77B4")[0], &polylines(&path, "#D62728")[0]);
        assert!(a.iter().zip(b).all(|(p, q)| p.0 == q.0 && q.1 < p.1), "{a:?} {b:?}");
        let (bold, light) = log_ticks(0.1, 450.0);
        assert_eq!(bold, vec![0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]);
        assert!(
            light.iter().all(|v| !bold.contains(v)) && light.len() == 3 * 6 + 2,
            "{light:?}"
        );
    }

    /// Three equal series form a chain, each raised a step above the one before (the
    /// review of stop 82: the third was raised as far as the second and hid it).
    #[test]
    fn three_equal_series_are_each_raised_a_step() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.svg");
        let pts = vec![(1.0, 10.0), (2.0, 20.0), (3.0, f64::NAN), (4.0, 40.0)];
        let f = Figure::new("t", "three", "x", "y")
            .ours("a", pts.clone())
            .ours("b", pts.clone())
            .ours("c", pts.clone())
            .ours("d", vec![(1.0, f64::NAN); 4]);
        assert_eq!((raise_steps(&f, 1), raise_steps(&f, 2)), (1, 2));
        assert!(
            legend_label(&f, 2).contains("same values as b"),
            "{}",
            legend_label(&f, 2)
        );
        assert_eq!(coincides_with(&f, 3), None, "a series with nothing drawn hides nothing");
        draw(&f, "e", &path).expect("draws");
        let ys = |c: &str| polylines(&path, c)[0][0].1;
        let (a, b, c) = (ys("#1F77B4"), ys("#D62728"), ys("#2CA02C"));
        assert!(c < b && b < a, "pixel y of a, b, c: {a}, {b}, {c}");
    }

    /// Window means are drawn as levels across their windows, not joined (rc-fig10),
    /// and a figure's note is drawn under it.
    #[test]
    fn window_means_and_the_note_are_drawn() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w.svg");
        let f = Figure::new("w", "windows", "time (s)", "ms")
            .windows(60.0)
            .ours("a", vec![(30.0, 90.0), (90.0, 160.0), (150.0, 90.0)])
            .note("What the paper says.");
        draw(&f, "e", &path).expect("draws");
        // The series' own lines (its colour, not the legend's short one): three level
        // segments, each as wide as its window, end to end, none joining two windows.
        let segs: Vec<Vec<(i32, i32)>> = polylines(&path, "#1F77B4")
            .into_iter()
            .filter(|s| s[s.len() - 1].0 - s[0].0 > 40)
            .collect();
        assert_eq!(segs.len(), 3, "{segs:?}");
        assert!(segs.iter().all(|s| s.len() == 2 && s[0].1 == s[1].1), "{segs:?}");
        let w: Vec<i32> = segs.iter().map(|s| s[1].0 - s[0].0).collect();
        assert!(w.iter().all(|x| (x - w[0]).abs() <= 1), "{w:?}");
        assert!(
            (segs[0][1].0 - segs[1][0].0).abs() <= 1 && (segs[1][1].0 - segs[2][0].0).abs() <= 1,
            "{segs:?}"
        );
        assert_ne!(segs[0][0].1, segs[1][0].1, "the middle window is its own level");
        assert!(texts(&path).iter().any(|t| t == "What the paper says."));
    }

    /// Every figure of the committed report: its SVG parses, shows every series of
    /// `docs/evaluation.json` in its legend, and the figure has a paper series or a
    /// note saying what the paper gives instead (issue 59: "a figure per paper figure
    /// with the paper's values beside ours").
    #[test]
    fn every_committed_figure_parses_shows_its_series_and_the_paper_or_why_not() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let json = std::fs::read_to_string(docs.join("evaluation.json")).expect("docs/evaluation.json");
        let data: Data = serde_json::from_str(&json).expect("evaluation.json parses");
        let mut n = 0;
        for d in &data.experiments {
            for b in &d.blocks {
                let Block::Figure(f) = b else { continue };
                n += 1;
                let t = texts(&docs.join("figures").join(format!("{}.svg", f.file)));
                assert_legend(f, &t);
                assert!(
                    f.series.iter().any(|s| s.source != Source::Ours) || !f.note.is_empty(),
                    "{} has neither a paper series nor a note saying why not",
                    f.file
                );
            }
        }
        assert!(n >= 50, "only {n} figures in docs/evaluation.json");
    }
}
