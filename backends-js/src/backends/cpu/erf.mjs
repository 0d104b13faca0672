// erf / erfc in float64 after W. J. Cody, "Rational Chebyshev approximations for the error
// function" (Math. Comp. 1969; the SPECFUN routine CALERF): relative error near 1e-16, far
// below one float32 ulp, so gelu rounded once to float32 is as good as an exact erf.
// JavaScript has no Math.erf, hence this file.

const A = [3.16112374387056560e0, 1.13864154151050156e2, 3.77485237685302021e2,
  3.20937758913846947e3, 1.85777706184603153e-1];
const B = [2.36012909523441209e1, 2.44024637934444173e2, 1.28261652607737228e3,
  2.84423683343917062e3];
const C = [5.64188496988670089e-1, 8.88314979438837594e0, 6.61191906371416295e1,
  2.98635138197400131e2, 8.81952221241769090e2, 1.71204761263407058e3, 2.05107837782607147e3,
  1.23033935479799725e3, 2.15311535474403846e-8];
const D = [1.57449261107098347e1, 1.17693950891312499e2, 5.37181101862009858e2,
  1.62138957456669019e3, 3.29079923573345963e3, 4.36261909014324716e3, 3.43936767414372164e3,
  1.23033935480374942e3];
const P = [3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
  1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2];
const Q = [2.56852019228982242e0, 1.87295284992346725e0, 5.27905102951428412e-1,
  6.05183413124413191e-2, 2.33520497626869185e-3];
const ONE_OVER_SQRT_PI = 5.6418958354775628695e-1;
const THRESHOLD = 0.46875;
const X_BIG = 26.543;

/** erf(y) for |y| <= 0.46875 (a rational function of y^2). */
function erfSmall(y) {
  const ysq = y * y;
  let num = A[4] * ysq;
  let den = ysq;
  for (let i = 0; i < 3; i++) {
    num = (num + A[i]) * ysq;
    den = (den + B[i]) * ysq;
  }
  return (y * (num + A[3])) / (den + B[3]);
}

/** exp(-y*y) * r, with y*y split so the exponential keeps its accuracy. */
function scaleByGaussian(y, r) {
  const ysq = Math.trunc(y * 16) / 16;
  const del = (y - ysq) * (y + ysq);
  return Math.exp(-ysq * ysq) * Math.exp(-del) * r;
}

/** erfc(y) for y > 0.46875. */
function erfcPositive(y) {
  if (y >= X_BIG) return 0;
  let r;
  if (y <= 4) {
    let num = C[8] * y;
    let den = y;
    for (let i = 0; i < 7; i++) {
      num = (num + C[i]) * y;
      den = (den + D[i]) * y;
    }
    r = (num + C[7]) / (den + D[7]);
  } else {
    const ysq = 1 / (y * y);
    let num = P[5] * ysq;
    let den = ysq;
    for (let i = 0; i < 4; i++) {
      num = (num + P[i]) * ysq;
      den = (den + Q[i]) * ysq;
    }
    r = (ysq * (num + P[4])) / (den + Q[4]);
    r = (ONE_OVER_SQRT_PI - r) / y;
  }
  return scaleByGaussian(y, r);
}

/** The error function, float64. @param {number} x */
export function erf(x) {
  if (Number.isNaN(x)) return NaN;
  const y = Math.abs(x);
  if (y <= THRESHOLD) return erfSmall(x);
  const r = 1 - erfcPositive(y);
  return x < 0 ? -r : r;
}

/** The complementary error function 1 - erf(x), float64, accurate for large |x|. */
export function erfc(x) {
  if (Number.isNaN(x)) return NaN;
  const y = Math.abs(x);
  if (y <= THRESHOLD) return 1 - erfSmall(x);
  const r = erfcPositive(y);
  return x < 0 ? 2 - r : r;
}

const SQRT1_2 = Math.SQRT1_2;
const INV_SQRT_2PI = 0.3989422804014327;

/** Standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2, float64. */
export function normalCdf(x) {
  return 0.5 * erfc(-x * SQRT1_2);
}

/** gelu(x) = x Phi(x), float64; gelu(-inf) = -0, the limit (not -inf * 0). */
export function gelu(x) {
  if (x === -Infinity) return -0;
  return x * normalCdf(x);
}

/** gelu'(x) = Phi(x) + x phi(x), float64; gelu'(+inf) = 1, gelu'(-inf) = +0 (the limits). */
export function geluDerivative(x) {
  if (x === Infinity) return 1;
  if (x === -Infinity) return 0;
  return normalCdf(x) + x * INV_SQRT_2PI * Math.exp(-0.5 * x * x);
}
