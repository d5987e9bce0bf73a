//! WGSL's geometric built-ins on float lanes: `normalize`, `distance`, `cross`, `smoothstep`,
//! `reflect`, `refract` and `faceForward`, mostly composed from the componentwise operations
//! of `lanes.rs`.

use naga::MathFunction as M;

use super::lanes::{f, map_each as map, zip_each as zip, Lanes};
use super::math::need;
use crate::Result;

/// The dot product of each lane's vectors.
fn dot(a: &Lanes, b: &Lanes) -> Lanes {
    let words = a
        .words
        .chunks(a.width.max(1))
        .zip(b.words.chunks(b.width.max(1)))
        .map(|(x, y)| {
            x.iter()
                .zip(y)
                .map(|(&p, &q)| f(p) * f(q))
                .sum::<f32>()
                .to_bits()
        });
    Lanes {
        width: 1,
        words: super::lanes::collect(words),
    }
}

/// The length of each lane's vector.
fn length(a: &Lanes) -> Lanes {
    map(&dot(a, a), &|w| f(w).sqrt().to_bits())
}

/// `fun` of `a` and the arguments after it, if it is a geometric function.
pub(super) fn geometry(fun: M, a: &Lanes, [b, c]: [Option<&Lanes>; 2]) -> Result<Option<Lanes>> {
    let sub = |x: u32, y: u32| (f(x) - f(y)).to_bits();
    Ok(Some(match fun {
        M::Normalize => zip(a, &length(a), &|x, l| (f(x) / f(l)).to_bits()),
        M::Distance => length(&zip(a, need(b)?, &sub)),
        M::Cross => cross(a, need(b)?),
        M::SmoothStep => {
            // smoothstep(low, high, x): t = clamp((x - low) / (high - low), 0, 1), t²(3 - 2t).
            let (low, high, x) = (a, need(b)?, need(c)?);
            let t = zip(&zip(x, low, &sub), &zip(high, low, &sub), &|n, d| {
                (f(n) / f(d)).clamp(0.0, 1.0).to_bits()
            });
            map(&t, &|t| (f(t) * f(t) * (3.0 - 2.0 * f(t))).to_bits())
        }
        M::Reflect => {
            // reflect(e, n) = e - 2 dot(n, e) n.
            let n = need(b)?;
            zip(
                a,
                &zip(n, &dot(n, a), &|n, d| (2.0 * f(d) * f(n)).to_bits()),
                &sub,
            )
        }
        M::Refract => refract(a, need(b)?, need(c)?),
        M::FaceForward => {
            // faceForward(e1, e2, e3) = e1 if dot(e2, e3) < 0, else -e1.
            zip(a, &dot(need(b)?, need(c)?), &|x, d| {
                if f(d) < 0.0 {
                    x
                } else {
                    (-f(x)).to_bits()
                }
            })
        }
        _ => return Ok(None),
    }))
}

/// `refract(e, n, eta)` of each lane: with `k = 1 - eta²(1 - dot(n, e)²)`, 0 where `k < 0`,
/// else `eta e - (eta dot(n, e) + √k) n`.
fn refract(e: &Lanes, n: &Lanes, eta: &Lanes) -> Lanes {
    let w = e.width.max(1);
    let words = e
        .words
        .chunks(w)
        .zip(n.words.chunks(w))
        .zip(&eta.words)
        .flat_map(|((e, n), &eta)| {
            let (eta, d) = (
                f(eta),
                e.iter().zip(n).map(|(&x, &y)| f(x) * f(y)).sum::<f32>(),
            );
            let k = 1.0 - eta * eta * (1.0 - d * d);
            e.iter().zip(n).map(move |(&x, &y)| {
                if k < 0.0 {
                    0
                } else {
                    (eta * f(x) - (eta * d + k.sqrt()) * f(y)).to_bits()
                }
            })
        });
    Lanes {
        width: w,
        words: super::lanes::collect(words),
    }
}

/// `cross(a, b)` of each lane's 3-vectors.
fn cross(a: &Lanes, b: &Lanes) -> Lanes {
    let words = a.words.chunks(3).zip(b.words.chunks(3)).flat_map(|(x, y)| {
        let (x, y) = ([f(x[0]), f(x[1]), f(x[2])], [f(y[0]), f(y[1]), f(y[2])]);
        [
            x[1] * y[2] - x[2] * y[1],
            x[2] * y[0] - x[0] * y[2],
            x[0] * y[1] - x[1] * y[0],
        ]
        .map(f32::to_bits)
    });
    Lanes {
        width: 3,
        words: super::lanes::collect(words),
    }
}
