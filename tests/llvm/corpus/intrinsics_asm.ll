; Intrinsics and inline asm: memcpy/memmove/memset, fmuladd, fma, sqrt,
; overflow arithmetic, ctpop/ctlz, lifetime, expect, vector reductions,
; masked loads, constrained FP, and inline asm (sideeffect, alignstack,
; inteldialect, multiple outputs, clobbers).
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define void @mem(ptr %dst, ptr %src, i64 %n) {
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %dst, ptr align 16 %src, i64 %n, i1 false)
  call void @llvm.memmove.p0.p0.i64(ptr %dst, ptr %src, i64 32, i1 true)
  call void @llvm.memset.p0.i64(ptr align 8 %dst, i8 0, i64 %n, i1 false)
  call void @llvm.memcpy.inline.p0.p0.i64(ptr %dst, ptr %src, i64 8, i1 false)
  ret void
}

define double @math(double %a, double %b, double %c) {
  %m = call double @llvm.fmuladd.f64(double %a, double %b, double %c)
  %f = call fast double @llvm.fma.f64(double %m, double %b, double %c)
  %s = call nnan double @llvm.sqrt.f64(double %f)
  %p = call double @llvm.pow.f64(double %s, double 2.0)
  %e = call afn double @llvm.exp.f64(double %p)
  %ab = call double @llvm.fabs.f64(double %e)
  %cs = call double @llvm.copysign.f64(double %ab, double %a)
  %mn = call double @llvm.minnum.f64(double %cs, double %b)
  %mx = call double @llvm.maximum.f64(double %mn, double %c)
  %fl = call double @llvm.floor.f64(double %mx)
  %pi = call double @llvm.powi.f64.i32(double %fl, i32 3)
  %cn = call double @llvm.experimental.constrained.fadd.f64(double %pi, double %a, metadata !"round.dynamic", metadata !"fpexcept.strict") #1
  ret double %cn
}

define i32 @bits(i32 %x, i32 %y) {
  %pair = call { i32, i1 } @llvm.sadd.with.overflow.i32(i32 %x, i32 %y)
  %sum = extractvalue { i32, i1 } %pair, 0
  %ovf = extractvalue { i32, i1 } %pair, 1
  %umul = call { i32, i1 } @llvm.umul.with.overflow.i32(i32 %x, i32 %y)
  %pop = call i32 @llvm.ctpop.i32(i32 %sum)
  %lz = call i32 @llvm.ctlz.i32(i32 %pop, i1 false)
  %tz = call range(i32 0, 33) i32 @llvm.cttz.i32(i32 %lz, i1 true)
  %sw = call i32 @llvm.bswap.i32(i32 %tz)
  %fs = call i32 @llvm.fshl.i32(i32 %sw, i32 %x, i32 5)
  %sm = call i32 @llvm.smax.i32(i32 %fs, i32 0)
  %ab = call i32 @llvm.abs.i32(i32 %sm, i1 true)
  %ex = call i1 @llvm.expect.i1(i1 %ovf, i1 false)
  %r = select i1 %ex, i32 0, i32 %ab
  ret i32 %r
}

define float @reductions(<8 x float> %v, <8 x i32> %w, ptr %p, <8 x i1> %m) {
  %s = call reassoc float @llvm.vector.reduce.fadd.v8f32(float 0.0, <8 x float> %v)
  %mx = call float @llvm.vector.reduce.fmax.v8f32(<8 x float> %v)
  %i = call i32 @llvm.vector.reduce.smax.v8i32(<8 x i32> %w)
  %ml = call <8 x float> @llvm.masked.load.v8f32.p0(ptr align 4 %p, <8 x i1> %m, <8 x float> zeroinitializer)
  call void @llvm.masked.store.v8f32.p0(<8 x float> %ml, ptr align 4 %p, <8 x i1> %m)
  %if = sitofp i32 %i to float
  %a = fadd float %s, %mx
  %b = fadd float %a, %if
  ret float %b
}

define void @lifetimes() {
  %buf = alloca [64 x i8], align 16
  call void @llvm.lifetime.start.p0(ptr %buf)
  call void @llvm.memset.p0.i64(ptr %buf, i8 1, i64 64, i1 false)
  call void @llvm.lifetime.end.p0(ptr %buf)
  call void @llvm.trap()
  unreachable
}

define i64 @asm_calls(i64 %x, ptr %p) {
  %cyc = call i64 asm sideeffect "rdtsc", "=A,~{dirflag},~{fpsr},~{flags}"()
  %sum = call i64 asm "addq $2, $0", "=r,0,r,~{cc}"(i64 %x, i64 %cyc)
  %two = call { i32, i32 } asm "cpuid", "={ax},={bx},{ax},~{cx},~{dx}"(i32 0)
  %lo = extractvalue { i32, i32 } %two, 0
  call void asm sideeffect alignstack "nop", ""()
  call void asm sideeffect inteldialect "mov eax, eax", "~{eax}"()
  call void asm sideeffect "movl $$0, $0", "=*m"(ptr elementtype(i32) %p)
  %q = call i64 asm "lea ($1,$1), $0", "=r,r"(i64 %sum) #0
  %lz = zext i32 %lo to i64
  %r = add i64 %q, %lz
  ret i64 %r
}

declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1 immarg)
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1 immarg)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1 immarg)
declare void @llvm.memcpy.inline.p0.p0.i64(ptr, ptr, i64 immarg, i1 immarg)
declare double @llvm.fmuladd.f64(double, double, double)
declare double @llvm.fma.f64(double, double, double)
declare double @llvm.sqrt.f64(double)
declare double @llvm.pow.f64(double, double)
declare double @llvm.exp.f64(double)
declare double @llvm.fabs.f64(double)
declare double @llvm.copysign.f64(double, double)
declare double @llvm.minnum.f64(double, double)
declare double @llvm.maximum.f64(double, double)
declare double @llvm.floor.f64(double)
declare double @llvm.powi.f64.i32(double, i32)
declare double @llvm.experimental.constrained.fadd.f64(double, double, metadata, metadata)
declare { i32, i1 } @llvm.sadd.with.overflow.i32(i32, i32)
declare { i32, i1 } @llvm.umul.with.overflow.i32(i32, i32)
declare i32 @llvm.ctpop.i32(i32)
declare i32 @llvm.ctlz.i32(i32, i1 immarg)
declare i32 @llvm.cttz.i32(i32, i1 immarg)
declare i32 @llvm.bswap.i32(i32)
declare i32 @llvm.fshl.i32(i32, i32, i32)
declare i32 @llvm.smax.i32(i32, i32)
declare i32 @llvm.abs.i32(i32, i1 immarg)
declare i1 @llvm.expect.i1(i1, i1)
declare float @llvm.vector.reduce.fadd.v8f32(float, <8 x float>)
declare float @llvm.vector.reduce.fmax.v8f32(<8 x float>)
declare i32 @llvm.vector.reduce.smax.v8i32(<8 x i32>)
declare <8 x float> @llvm.masked.load.v8f32.p0(ptr, <8 x i1>, <8 x float>)
declare void @llvm.masked.store.v8f32.p0(<8 x float>, ptr, <8 x i1>)
declare void @llvm.lifetime.start.p0(ptr)
declare void @llvm.lifetime.end.p0(ptr)
declare void @llvm.trap()

attributes #0 = { nounwind memory(none) }
attributes #1 = { strictfp }
