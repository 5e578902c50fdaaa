//! Drawing a report's figures: each [`Figure`] as an SVG line chart (plotters), our
//! series solid, the paper's dashed or dotted, one colour per protocol family.

use crate::experiments::{self, Figure, Source};
use anyhow::{bail, Result};
use std::path::Path;

/// Draws `f` as an SVG line chart: our series solid with dots, the paper's dashed
/// (stated) or dotted (read off a figure) with crosses.
pub(super) fn draw(f: &Figure, experiment: &str, path: &Path) -> Result<()> {
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
