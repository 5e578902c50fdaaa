//! Where the DCs are: `rc-fig3` (commit latency for DC sets C .. CVOIS) and `rc-fig4`
//! (commit latency for replog's leader placements beside rc).

use super::common::{distinct, paper_cfg, rc_and_replog, PAPER, PAPER_WORKLOAD, RC5};
use crate::experiments::{f, fo, ok, Claim, Ctx, Figure, Source};
use anyhow::Result;
use meridian_core::Topology;

pub(super) fn fig3(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    cx.say("Fig. 3: mean commit latency (ms) by DC set; 2500 txns, ycsb 5 ops 1:1, 3000 items, 10 txn/s per DC");
    cx.table(&[
        "DCs", "leaders", "paper rc", "paper rl", "rc", "replog", "paper x", "ours x", "ratio", "check",
    ]);
    // (DC set, replog leaders, paper rc ms, paper replog ms, paper replog/rc ratio)
    type Row<'a> = (&'a str, &'a str, Option<f64>, Option<f64>, Option<f64>);
    let rows: Vec<Row> = cx.sweep(&[
        ("C", "C/C/C", Some(5.8), Some(14.8), None),
        ("CV", "C/C/V", Some(90.0), Some(267.0), None),
        ("CVO", "C/V/O", None, None, None),
        ("CVOI", "V/O/I", None, None, Some(3.41)),
        ("CVOIS", "V/O/I", None, None, Some(2.89)),
    ]);
    // Per DC set: (set, rc ms, replog ms).
    let mut got: Vec<(&str, f64, f64)> = vec![];
    let (mut paper_rc, mut paper_rl, mut paper_ratio) = (vec![], vec![], vec![]);
    // Why the one-DC and the intercontinental rows differ from the paper (EVALUATION.md).
    let one_dc = "the paper's 5.8/14.8 ms are the EC2 prototype's per-message processing and intra-DC hops; \
                  the simulator charges 0.25 ms per intra-DC hop and 10 us per message";
    let far = "our rc is faster than the paper's: a coordinator's accept vote carries the transaction, so a DC \
               may prepare from a peer's vote before the client's own request arrives; the paper's rc pays ~6 ms \
               per-DC overhead on top";
    // Claims follow the table (live output prints a table once the next block starts).
    let mut claims = vec![];
    for (i, (set, leaders, prc, prl, px)) in rows.iter().copied().enumerate() {
        let names: Vec<String> = set.chars().map(|c| c.to_string()).collect();
        let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        let topo = rc5.subset(&names)?;
        let (rc, rl) = rc_and_replog(cx, &topo, PAPER_WORKLOAD, &names, leaders)?;
        let (a, b) = (rc.report.commit_latency_ms.mean, rl.report.commit_latency_ms.mean);
        let paper_x = px.or(prl.zip(prc).map(|(l, r)| l / r));
        let ours_x = b / a;
        if let Some(x) = paper_x {
            paper_ratio.push((i as f64, x));
        }
        cx.row(vec![
            set.to_string(),
            leaders.to_string(),
            fmt_opt(prc),
            fmt_opt(prl),
            f(a, 1),
            f(b, 1),
            fo(paper_x, 2),
            f(ours_x, 2),
            fo(paper_x.map(|x| ours_x / x), 2),
            format!("{}/{}", ok(&rc), ok(&rl)),
        ]);
        got.push((set, a, b));
        if let Some(p) = prc {
            paper_rc.push((i as f64, p));
        }
        if let Some(p) = prl {
            paper_rl.push((i as f64, p));
        }
        let cause = if set == "C" { one_dc } else { "" };
        if let (Some(p), Some(q)) = (prc, prl) {
            claims.push(
                Claim::numeric(
                    PAPER,
                    "Fig. 3",
                    &format!("DC set {set}: rc mean commit latency"),
                    p,
                    a,
                    "ms",
                    0.15,
                )
                .because(cause),
            );
            claims.push(
                Claim::numeric(
                    PAPER,
                    "Fig. 3",
                    &format!("DC set {set}: replog ({leaders}) mean commit latency"),
                    q,
                    b,
                    "ms",
                    0.15,
                )
                .because(cause),
            );
        }
        if let Some(x) = px {
            claims.push(
                Claim::numeric(
                    PAPER,
                    "Fig. 3",
                    &format!(
                        "DC set {set}: replog / rc commit latency (\"{:.0}% higher\")",
                        100.0 * (x - 1.0)
                    ),
                    x,
                    ours_x,
                    "x",
                    0.15,
                )
                .because(far),
            );
        }
    }
    cx.say("x = replog / rc commit latency; ratio = ours x / paper x. CVOI and CVOIS: the paper gives only \"241% and 189% higher\".");
    for c in claims {
        cx.claim(c);
    }
    let by = |s: &str| got.iter().find(|g| g.0 == s).copied();
    if let (Some(cv), Some(cvo)) = (by("CV"), by("CVO")) {
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 3",
            "CVO below CV for both protocols (a closer majority)",
            "yes",
            format!("rc {:.1} < {:.1}, replog {:.1} < {:.1} ms", cvo.1, cv.1, cvo.2, cv.2),
            cvo.1 < cv.1 && cvo.2 < cv.2,
            "",
        ));
    }
    let multi: Vec<_> = got.iter().filter(|g| g.0.len() > 1).collect();
    if !multi.is_empty() {
        let worst = multi.iter().map(|g| g.2 / g.1).fold(f64::INFINITY, f64::min);
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 3",
            "rc below replog at every multi-DC set",
            "yes",
            format!("smallest replog/rc {worst:.2}"),
            worst > 1.0,
            "",
        ));
    }
    let cats: Vec<&str> = got.iter().map(|g| g.0).collect();
    cx.figure(
        Figure::new(
            "rc-fig3",
            "Fig. 3: commit latency by DC set",
            "DC set",
            "mean commit latency (ms)",
        )
        .categories(&cats)
        .log_y()
        .ours("rc", got.iter().enumerate().map(|(i, g)| (i as f64, g.1)).collect())
        .ours("replog", got.iter().enumerate().map(|(i, g)| (i as f64, g.2)).collect())
        .paper("paper rc", Source::PaperText, paper_rc)
        .paper("paper replog", Source::PaperText, paper_rl),
    );
    // The paper states CVOI's and CVOIS's gap only as a ratio ("241% and 189% higher").
    cx.figure(
        Figure::new(
            "rc-fig3-ratio",
            "Fig. 3: replog / rc commit latency by DC set",
            "DC set",
            "replog / rc commit latency (x)",
        )
        .categories(&cats)
        .ours(
            "replog / rc",
            got.iter().enumerate().map(|(i, g)| (i as f64, g.2 / g.1)).collect(),
        )
        .paper("paper replog / rc", Source::PaperText, paper_ratio),
    );
    Ok(())
}

fn fmt_opt(x: Option<f64>) -> String {
    fo(x, 1)
}

pub(super) fn fig4(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    let all = RC5;
    cx.say("Fig. 4: mean commit latency (ms) by replog leader placement, rc5, paper workload");
    let c_rc = paper_cfg(cx, &rc5, PAPER_WORKLOAD, &all)?;
    let rc = cx.run("rc", &c_rc)?;
    let rc_ms = rc.report.commit_latency_ms.mean;
    cx.table(&["leaders", "paper", "measured", "ratio", "check"]);
    cx.row(vec![
        "rc".into(),
        "< all".into(),
        f(rc_ms, 1),
        "-".into(),
        ok(&rc).into(),
    ]);
    let placements = cx.sweep(&[
        ("C/C/C", Some(206.0)),
        ("C/V/O", None),
        ("V/O/I", Some(387.0)),
        ("S/S/S", None),
    ]);
    let mut got: Vec<(&str, f64)> = vec![];
    let mut paper_pts = vec![];
    // Claims follow the table (live output prints a table once the next block starts).
    let mut claims = vec![];
    for (i, (leaders, paper)) in placements.iter().copied().enumerate() {
        let c = paper_cfg(cx, &rc5, PAPER_WORKLOAD, &distinct(leaders))?;
        let rl = cx.run(&format!("replog:leaders={leaders}"), &c)?;
        let m = rl.report.commit_latency_ms.mean;
        cx.row(vec![
            leaders.to_string(),
            fmt_opt(paper),
            f(m, 1),
            fo(paper.map(|p| m / p), 2),
            ok(&rl).into(),
        ]);
        got.push((leaders, m));
        if let Some(p) = paper {
            paper_pts.push((i as f64, p));
            claims.push(Claim::numeric(
                PAPER,
                "Fig. 4",
                &format!("replog {leaders} mean commit latency"),
                p,
                m,
                "ms",
                0.15,
            ));
        }
    }
    for c in claims {
        cx.claim(c);
    }
    let lowest = got.iter().map(|g| g.1).fold(f64::INFINITY, f64::min);
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 4",
        "rc below every replog placement, even C/C/C",
        "yes",
        format!("rc {rc_ms:.1} ms, best placement {lowest:.1} ms"),
        rc_ms < lowest,
        "",
    ));
    let by = |s: &str| got.iter().find(|g| g.0 == s).map(|g| g.1);
    if let Some(ccc) = by("C/C/C") {
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 4",
            "C/C/C is the best replog placement",
            "yes",
            format!("C/C/C {ccc:.1} ms, lowest {lowest:.1} ms"),
            ccc <= lowest,
            "",
        ));
        if let Some(sss) = by("S/S/S") {
            cx.claim(Claim::shape(
                PAPER,
                "Fig. 4",
                "S/S/S much higher than C/C/C (a farther majority), here: above 1.5x",
                "yes",
                format!("{sss:.1} vs {ccc:.1} ms ({:.2}x)", sss / ccc),
                sss > 1.5 * ccc,
                "",
            ));
        }
    }
    let cats: Vec<&str> = got.iter().map(|g| g.0).collect();
    cx.figure(
        Figure::new(
            "rc-fig4",
            "Fig. 4: commit latency by replog leader placement (rc5)",
            "replog leader placement (shards X/Y/Z)",
            "mean commit latency (ms)",
        )
        .categories(&cats)
        .ours("replog", got.iter().enumerate().map(|(i, g)| (i as f64, g.1)).collect())
        .ours(
            "rc (no leaders; same run at every x)",
            (0..got.len()).map(|i| (i as f64, rc_ms)).collect(),
        )
        .paper("paper replog", Source::PaperText, paper_pts),
    );
    Ok(())
}
