"""Independent reference values for the accountant tests (mpmath, 40 digits).

Run: python3 reference.py   (needs only mpmath). The Go tests hard-code the
printed values; nothing here shares code with the Go implementation.

RDP of the Poisson-subsampled Gaussian with rate q and noise multiplier z at
order a is log(A_a)/(a-1) with the defining integral (Mironov, Talwar, Zhang
2019, Sec. 3.3)
    A_a = E_{x ~ N(0, z^2)} [ (1 - q + q exp((2x - 1)/(2 z^2)))^a ],
evaluated here by adaptive quadrature, and for integer a also by the exact
binomial sum (two independent routes).
"""
import mpmath as mp

mp.mp.dps = 40


def log_erfc(x):
    return mp.log(mp.erfc(mp.mpf(x)))


def log_a_quad(q, z, a):
    q, z, a = mp.mpf(q), mp.mpf(z), mp.mpf(a)

    def f(x):
        ratio = 1 - q + q * mp.exp((2 * x - 1) / (2 * z * z))
        return mp.npdf(x, 0, z) * ratio ** a

    # The integrand peaks near the saddle of the tilted Gaussian; integrate
    # over a wide range split at many points so quadrature sees the peak.
    lo, hi = -40 * z, 40 * z + a * 2
    pts = mp.linspace(lo, hi, 400)
    val = mp.quad(f, pts)
    return mp.log(val)


def log_a_binom(q, z, a):
    q, z = mp.mpf(q), mp.mpf(z)
    s = mp.mpf(0)
    for i in range(a + 1):
        s += mp.binomial(a, i) * q**i * (1 - q) ** (a - i) * mp.exp((i * i - i) / (2 * z * z))
    return mp.log(s)


if __name__ == "__main__":
    print("// logErfc references: x, log(erfc(x))")
    for x in ["-30", "-3", "0", "0.5", "1", "5", "10", "19.5", "20", "20.5", "25", "27", "30", "100", "1000", "1e5"]:
        print("{%s, %s}," % (x, mp.nstr(log_erfc(mp.mpf(x)), 20)))
    print("// RDP references: q, z, order, rdp (per step)")
    cases = [
        ("0.01", "0.8", ["1.5", "2", "4.8", "10.5", "32"]),
        ("256/60000", "1.1", ["1.1", "8", "8.1", "63"]),
        ("0.5", "2", ["1.25", "2.5", "3"]),
        ("1e-6", "10", ["2.5", "100", "200.5"]),
        ("0.05", "0.6", ["1.7", "12"]),
    ]
    for qs, zs, orders in cases:
        q = mp.mpf(eval(qs)) if "/" in qs else mp.mpf(qs)
        for o in orders:
            a = mp.mpf(o)
            la = log_a_quad(q, zs, a)
            if a == int(a):
                lb = log_a_binom(q, zs, int(a))
                assert abs(la - lb) < mp.mpf("1e-25") * max(1, abs(lb)), (qs, zs, o, la, lb)
            print("{%s, %s, %s, %s}," % (qs, zs, o, mp.nstr(la / (a - 1), 20)))
