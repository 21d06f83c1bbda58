/* Unsupported: the fast inverse square root computes its first guess by
 * integer arithmetic on the bits of an active float. The guess depends on
 * the input, so treating it as a constant would give a wrong derivative:
 * ADError naming the bit pattern. */
#include "enzyme.h"
#include <stdint.h>
#include <string.h>

float rsqrt_fast(float number) {
    int32_t i;
    float y = number, x2 = number * 0.5f;
    memcpy(&i, &y, sizeof i);
    i = 0x5f3759df - (i >> 1);
    memcpy(&y, &i, sizeof y);
    return y * (1.5f - x2 * y * y);
}

float __enzyme_autodiff_f(void *, float);
float rsqrt_grad(float x) { return __enzyme_autodiff_f((void *)rsqrt_fast, x); }
