/* The benchmark functions (benchmarks/ad_cpu.py); tested like the rest. */
#include "enzyme.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* dot product of the two halves of x */
double bdot(const double *a, const double *b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
double bdot_primal(double *x, int n) { return bdot(x, x + n / 2, n / 2); }
void bdot_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)bdot, enzyme_dup, x, dx, enzyme_dup, x + n / 2, dx + n / 2,
                           enzyme_const, n / 2);
}
double bdot_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)bdot, enzyme_dup, x, vx, enzyme_dup, x + n / 2, vx + n / 2,
                            enzyme_const, n / 2);
}

/* sum over points of a degree-7 polynomial: x = [c0..c7, points...] */
#define POLY_DEG 7
double bpoly(const double *x, int n) {
    double s = 0.0;
    for (int j = POLY_DEG + 1; j < n; j++) {
        double t = x[j], p = x[POLY_DEG];
        for (int i = POLY_DEG - 1; i >= 0; i--) p = p * t + x[i];
        s += p;
    }
    return s;
}
double bpoly_primal(double *x, int n) { return bpoly(x, n); }
void bpoly_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)bpoly, enzyme_dup, x, dx, enzyme_const, n);
}
double bpoly_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)bpoly, enzyme_dup, x, vx, enzyme_const, n);
}

/* log(sum(exp(x))) with the maximum subtracted */
double blse(const double *x, int n) {
    double m = x[0];
    for (int i = 1; i < n; i++) m = fmax(m, x[i]);
    double s = 0.0;
    for (int i = 0; i < n; i++) s += exp(x[i] - m);
    return m + log(s);
}
double blse_primal(double *x, int n) { return blse(x, n); }
void blse_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)blse, enzyme_dup, x, dx, enzyme_const, n);
}
double blse_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)blse, enzyme_dup, x, vx, enzyme_const, n);
}

/* 1-D heat equation: explicit steps on two heap buffers swapped each step;
 * returns a weighted energy of the final state */
#define HEAT_STEPS 20
double bheat(const double *u0, int n, int steps) {
    size_t bytes = (size_t)n * sizeof(double);
    double *u = malloc(bytes), *v = malloc(bytes);
    memcpy(u, u0, bytes);
    for (int t = 0; t < steps; t++) {
        v[0] = u[0];
        v[n - 1] = u[n - 1];
        for (int i = 1; i < n - 1; i++) v[i] = u[i] + 0.25 * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        double *w = u;
        u = v;
        v = w;
    }
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (1.0 + 0.01 * i) * u[i] * u[i];
    free(u);
    free(v);
    return s;
}
double bheat_primal(double *x, int n) { return bheat(x, n, HEAT_STEPS); }
void bheat_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)bheat, enzyme_dup, x, dx, enzyme_const, n, enzyme_const, HEAT_STEPS);
}
double bheat_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)bheat, enzyme_dup, x, vx, enzyme_const, n, enzyme_const, HEAT_STEPS);
}

/* a small MLP 8 -> 16 (tanh) -> 1 on a fixed batch of 32 inputs, squared loss;
 * x holds the 161 parameters: W1 (16x8), b1 (16), w2 (16), b2 */
#define MLP_IN 8
#define MLP_HID 16
#define MLP_BATCH 32
#define MLP_PARAMS (MLP_HID * MLP_IN + MLP_HID + MLP_HID + 1)
double bmlp(const double *p, int batch) {
    const double *w1 = p, *b1 = p + MLP_HID * MLP_IN, *w2 = b1 + MLP_HID, *b2 = w2 + MLP_HID;
    double loss = 0.0;
    for (int k = 0; k < batch; k++) {
        double in[MLP_IN], h[MLP_HID];
        for (int i = 0; i < MLP_IN; i++) in[i] = sin(0.3 * (k * MLP_IN + i) + 0.1);
        double out = b2[0];
        for (int j = 0; j < MLP_HID; j++) {
            double a = b1[j];
            for (int i = 0; i < MLP_IN; i++) a += w1[j * MLP_IN + i] * in[i];
            h[j] = tanh(a);
            out += w2[j] * h[j];
        }
        double target = 0.25 * k - 0.3;
        loss += (out - target) * (out - target);
    }
    return loss / batch;
}
double bmlp_primal(double *x, int n) { return bmlp(x, MLP_BATCH); }
void bmlp_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)bmlp, enzyme_dup, x, dx, enzyme_const, MLP_BATCH);
}
double bmlp_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)bmlp, enzyme_dup, x, vx, enzyme_const, MLP_BATCH);
}

/* gravitational potential energy of n/3 bodies (positions x, y, z), softened */
double bnbody(const double *pos, int bodies) {
    double e = 0.0;
    for (int i = 0; i < bodies; i++) {
        double mi = 1.0 + 0.1 * (i % 5);
        for (int j = i + 1; j < bodies; j++) {
            double mj = 1.0 + 0.1 * (j % 5);
            double dx = pos[3 * i] - pos[3 * j], dy = pos[3 * i + 1] - pos[3 * j + 1],
                   dz = pos[3 * i + 2] - pos[3 * j + 2];
            e -= mi * mj / sqrt(dx * dx + dy * dy + dz * dz + 0.01);
        }
    }
    return e;
}
double bnbody_primal(double *x, int n) { return bnbody(x, n / 3); }
void bnbody_grad(double *x, double *dx, int n) {
    __enzyme_autodiff_void((void *)bnbody, enzyme_dup, x, dx, enzyme_const, n / 3);
}
double bnbody_fwd(double *x, double *vx, int n) {
    return __enzyme_fwddiff((void *)bnbody, enzyme_dup, x, vx, enzyme_const, n / 3);
}
