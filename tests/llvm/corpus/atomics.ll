; Atomics: every atomicrmw operation, cmpxchg (weak, volatile, orderings),
; fence, atomic load/store with orderings, syncscope and alignment.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define void @rmw_int(ptr %p, i32 %v) {
  %xchg = atomicrmw xchg ptr %p, i32 %v seq_cst, align 4
  %add = atomicrmw add ptr %p, i32 %v monotonic, align 4
  %sub = atomicrmw sub ptr %p, i32 %v acquire, align 4
  %and = atomicrmw and ptr %p, i32 %v release, align 4
  %nand = atomicrmw nand ptr %p, i32 %v acq_rel, align 4
  %or = atomicrmw or ptr %p, i32 %v seq_cst, align 4
  %xor = atomicrmw xor ptr %p, i32 %v monotonic, align 4
  %max = atomicrmw max ptr %p, i32 %v monotonic, align 4
  %min = atomicrmw min ptr %p, i32 %v monotonic, align 4
  %umax = atomicrmw umax ptr %p, i32 %v monotonic, align 4
  %umin = atomicrmw umin ptr %p, i32 %v monotonic, align 4
  %uinc = atomicrmw uinc_wrap ptr %p, i32 %v monotonic, align 4
  %udec = atomicrmw udec_wrap ptr %p, i32 %v monotonic, align 4
  %usubc = atomicrmw usub_cond ptr %p, i32 %v monotonic, align 4
  %usubs = atomicrmw usub_sat ptr %p, i32 %v monotonic, align 4
  %vol = atomicrmw volatile add ptr %p, i32 1 syncscope("singlethread") seq_cst, align 4
  %wide = atomicrmw add ptr %p, i64 1 seq_cst, align 8
  %ptrx = atomicrmw xchg ptr %p, ptr null acquire, align 8
  ret void
}

define void @rmw_float(ptr %p, float %f, double %d) {
  %fadd = atomicrmw fadd ptr %p, float %f monotonic, align 4
  %fsub = atomicrmw fsub ptr %p, float %f monotonic, align 4
  %fmax = atomicrmw fmax ptr %p, float %f monotonic, align 4
  %fmin = atomicrmw fmin ptr %p, float %f monotonic, align 4
  %fmaximum = atomicrmw fmaximum ptr %p, float %f monotonic, align 4
  %fminimum = atomicrmw fminimum ptr %p, float %f monotonic, align 4
  %dadd = atomicrmw fadd ptr %p, double %d syncscope("agent") acq_rel, align 8
  %fxchg = atomicrmw xchg ptr %p, float %f seq_cst, align 4
  %hadd = atomicrmw fadd ptr %p, half 0xH3C00 monotonic, align 2
  %vadd = atomicrmw fadd ptr %p, <2 x half> <half 0xH3C00, half 0xH4000> monotonic, align 4
  ret void
}

define { i32, i1 } @cas(ptr %p, i32 %old, i32 %new) {
  %a = cmpxchg ptr %p, i32 %old, i32 %new seq_cst seq_cst, align 4
  %b = cmpxchg weak ptr %p, i32 %old, i32 %new acq_rel acquire, align 4
  %c = cmpxchg volatile ptr %p, i32 %old, i32 %new release monotonic, align 4
  %d = cmpxchg weak volatile ptr %p, i32 %old, i32 %new syncscope("singlethread") monotonic monotonic, align 4
  %e = cmpxchg ptr %p, ptr null, ptr %p acquire acquire, align 8
  %ok = extractvalue { i32, i1 } %b, 1
  %val = extractvalue { i32, i1 } %a, 0
  ret { i32, i1 } %d
}

define i64 @loads_stores(ptr %p) {
  %a = load atomic i64, ptr %p unordered, align 8
  %b = load atomic i64, ptr %p monotonic, align 8
  %c = load atomic i64, ptr %p acquire, align 8
  %d = load atomic i64, ptr %p seq_cst, align 8
  %e = load atomic volatile i64, ptr %p syncscope("singlethread") acquire, align 8
  %f = load atomic double, ptr %p monotonic, align 8
  %g = load atomic ptr, ptr %p acquire, align 8
  store atomic i64 %a, ptr %p unordered, align 8
  store atomic i64 %b, ptr %p monotonic, align 8
  store atomic i64 %c, ptr %p release, align 8
  store atomic i64 %d, ptr %p seq_cst, align 8
  store atomic volatile i64 %e, ptr %p syncscope("singlethread") release, align 8
  store atomic double %f, ptr %p release, align 8
  fence acquire
  fence release
  fence acq_rel
  fence seq_cst
  fence syncscope("singlethread") seq_cst
  fence syncscope("agent") acquire
  %s0 = add i64 %a, %b
  %s1 = add i64 %s0, %c
  %s2 = add i64 %s1, %d
  %s3 = add i64 %s2, %e
  ret i64 %s3
}

define i32 @spin_add(ptr %counter, i32 %n) {
entry:
  %cur0 = load atomic i32, ptr %counter monotonic, align 4
  br label %retry

retry:
  %cur = phi i32 [ %cur0, %entry ], [ %seen, %retry ]
  %next = add i32 %cur, %n
  %pair = cmpxchg weak ptr %counter, i32 %cur, i32 %next acq_rel monotonic, align 4
  %seen = extractvalue { i32, i1 } %pair, 0
  %ok = extractvalue { i32, i1 } %pair, 1
  br i1 %ok, label %done, label %retry

done:
  ret i32 %next
}

define float @atomic_float_sum(ptr %acc, ptr %xs, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %px = getelementptr inbounds float, ptr %xs, i64 %i
  %x = load float, ptr %px, align 4
  %old = atomicrmw fadd ptr %acc, float %x monotonic, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = load atomic float, ptr %acc seq_cst, align 4
  ret float %r
}
