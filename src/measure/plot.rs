//! `history --plot`: an SVG of a tuning history. Candidates in the order they were evaluated;
//! the step line is the best so far relative to the start (the product of accepted gains), each
//! dot is where a candidate's own measured gain would have put it, coloured by verdict. Log scale.

use super::judge::Verdict;
use std::fmt::Write as _;

/// One evaluated candidate: its verdict and paired log-gain over its incumbent, when measured.
pub struct Point {
    pub verdict: Verdict,
    pub gain: Option<f64>,
}

const W: f64 = 800.0;
const H: f64 = 400.0;
const PAD: f64 = 50.0;

fn colour(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Accepted => "#1a7f37",
        Verdict::Rejected => "#9a6700",
        Verdict::Held => "#0969da",
        Verdict::Quarantined => "#8250df",
        Verdict::Failed => "#cf222e",
    }
}

/// Best so far (log, relative to the start) after each candidate, starting at (0, 0), and each
/// measured candidate as (index, where its own gain would have put it, verdict).
type Series = (Vec<(usize, f64)>, Vec<(usize, f64, Verdict)>);

fn series(points: &[Point]) -> Series {
    let mut best = 0.0f64;
    let mut dots = Vec::new();
    let mut steps = vec![(0usize, 0.0f64)];
    for (i, p) in points.iter().enumerate() {
        if let Some(g) = p.gain {
            dots.push((i + 1, best + g, p.verdict));
        }
        if p.verdict == Verdict::Accepted {
            best += p.gain.unwrap_or(0.0);
        }
        steps.push((i + 1, best));
    }
    (steps, dots)
}

/// Candidate index and log gain to pixels.
struct Scale {
    lo: f64,
    hi: f64,
    n: f64,
}

impl Scale {
    fn x(&self, i: usize) -> f64 {
        PAD + (W - 2.0 * PAD) * i as f64 / self.n
    }

    fn y(&self, v: f64) -> f64 {
        H - PAD - (H - 2.0 * PAD) * (v - self.lo) / (self.hi - self.lo)
    }
}

/// The x axis and a few labelled gridlines in "x start".
fn axes(out: &mut String, s: &Scale) {
    let _ = writeln!(
        out,
        "<line x1=\"{PAD}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>",
        H - PAD,
        W - PAD,
        H - PAD
    );
    for k in 0..=4 {
        let v = s.lo + (s.hi - s.lo) * k as f64 / 4.0;
        let _ = writeln!(
            out,
            "<line x1=\"{PAD}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"4\" y=\"{2:.1}\">{3:.2}x</text>",
            s.y(v),
            W - PAD,
            s.y(v) + 4.0,
            v.exp()
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\">candidate</text>",
        W / 2.0,
        H - 12.0
    );
}

pub fn svg(title: &str, points: &[Point]) -> String {
    let (steps, dots) = series(points);
    let values = || dots.iter().map(|d| d.1).chain(steps.iter().map(|s| s.1));
    let lo = values().fold(0.0f64, f64::min);
    let hi = values().fold(0.0f64, f64::max).max(lo + 0.1);
    let s = Scale {
        lo,
        hi,
        n: points.len().max(1) as f64,
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{PAD}\" y=\"24\" font-size=\"14\">{}</text>\n",
        title.replace('&', "&amp;").replace('<', "&lt;")
    );
    axes(&mut out, &s);
    let path: Vec<String> = steps
        .windows(2)
        .map(|w| {
            format!(
                "L{:.1},{:.1} L{:.1},{:.1}",
                s.x(w[1].0),
                s.y(w[0].1),
                s.x(w[1].0),
                s.y(w[1].1)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "<path d=\"M{:.1},{:.1} {}\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"2\"><title>best so far</title></path>",
        s.x(0),
        s.y(0.0),
        path.join(" ")
    );
    for (i, v, verdict) in dots {
        let _ = writeln!(
            out,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{}\"><title>#{i} {verdict}: {:+.1}%</title></circle>",
            s.x(i),
            s.y(v),
            colour(verdict),
            ((v - (steps[i - 1].1)).exp() - 1.0) * 100.0
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_the_best_so_far_and_every_measured_candidate() {
        let pts = vec![
            Point {
                verdict: Verdict::Accepted,
                gain: Some(0.5),
            },
            Point {
                verdict: Verdict::Failed,
                gain: None,
            },
            Point {
                verdict: Verdict::Rejected,
                gain: Some(-0.1),
            },
        ];
        let s = svg("t <x>", &pts);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert_eq!(s.matches("<circle").count(), 2);
        assert!(s.contains("t &lt;x>"));
        assert!(s.contains(">1.65x<"), "top label is exp(0.5)");
    }
}
