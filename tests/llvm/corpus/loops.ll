; Numerical loop nests as a frontend emits them at -O0 (allocas, loads and
; stores of induction variables) so that mem2reg, LICM, unrolling and the
; vectoriser all have work: matrix multiply, prefix sum, polynomial
; evaluation with an early exit, and a Newton iteration.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define void @matmul(ptr %c, ptr %a, ptr %b, i64 %n) {
entry:
  %i.addr = alloca i64, align 8
  %j.addr = alloca i64, align 8
  %k.addr = alloca i64, align 8
  %acc.addr = alloca double, align 8
  store i64 0, ptr %i.addr, align 8
  br label %i.cond

i.cond:
  %i = load i64, ptr %i.addr, align 8
  %i.ok = icmp slt i64 %i, %n
  br i1 %i.ok, label %j.init, label %end

j.init:
  store i64 0, ptr %j.addr, align 8
  br label %j.cond

j.cond:
  %j = load i64, ptr %j.addr, align 8
  %j.ok = icmp slt i64 %j, %n
  br i1 %j.ok, label %k.init, label %i.inc

k.init:
  store double 0.0, ptr %acc.addr, align 8
  store i64 0, ptr %k.addr, align 8
  br label %k.cond

k.cond:
  %k = load i64, ptr %k.addr, align 8
  %k.ok = icmp slt i64 %k, %n
  br i1 %k.ok, label %k.body, label %j.store

k.body:
  %i.row = mul nsw i64 %i, %n
  %a.idx = add nsw i64 %i.row, %k
  %a.p = getelementptr inbounds double, ptr %a, i64 %a.idx
  %a.v = load double, ptr %a.p, align 8
  %k.row = mul nsw i64 %k, %n
  %b.idx = add nsw i64 %k.row, %j
  %b.p = getelementptr inbounds double, ptr %b, i64 %b.idx
  %b.v = load double, ptr %b.p, align 8
  %prod = fmul double %a.v, %b.v
  %acc = load double, ptr %acc.addr, align 8
  %acc.new = fadd double %acc, %prod
  store double %acc.new, ptr %acc.addr, align 8
  %k.next = add nsw i64 %k, 1
  store i64 %k.next, ptr %k.addr, align 8
  br label %k.cond

j.store:
  %res = load double, ptr %acc.addr, align 8
  %c.row = mul nsw i64 %i, %n
  %c.idx = add nsw i64 %c.row, %j
  %c.p = getelementptr inbounds double, ptr %c, i64 %c.idx
  store double %res, ptr %c.p, align 8
  %j.next = add nsw i64 %j, 1
  store i64 %j.next, ptr %j.addr, align 8
  br label %j.cond

i.inc:
  %i.next = add nsw i64 %i, 1
  store i64 %i.next, ptr %i.addr, align 8
  br label %i.cond

end:
  ret void
}

define void @prefix_sum(ptr noalias %out, ptr noalias readonly %in, i32 %n) {
entry:
  %nonempty = icmp sgt i32 %n, 0
  br i1 %nonempty, label %loop, label %exit

loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %run = phi float [ 0.0, %entry ], [ %run.next, %loop ]
  %idx = sext i32 %i to i64
  %pi = getelementptr inbounds float, ptr %in, i64 %idx
  %x = load float, ptr %pi, align 4
  %run.next = fadd float %run, %x
  %po = getelementptr inbounds float, ptr %out, i64 %idx
  store float %run.next, ptr %po, align 4
  %i.next = add nsw i32 %i, 1
  %more = icmp slt i32 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  ret void
}

define double @horner_until(ptr %coef, i64 %deg, double %x, double %limit) {
entry:
  br label %loop

loop:
  %k = phi i64 [ %deg, %entry ], [ %k.next, %cont ]
  %acc = phi double [ 0.0, %entry ], [ %acc.next, %cont ]
  %pc = getelementptr inbounds double, ptr %coef, i64 %k
  %c = load double, ptr %pc, align 8
  %m = fmul double %acc, %x
  %acc.next = fadd double %m, %c
  %big = fcmp ogt double %acc.next, %limit
  br i1 %big, label %early, label %cont

cont:
  %k.next = add nsw i64 %k, -1
  %fin = icmp slt i64 %k.next, 0
  br i1 %fin, label %done, label %loop

early:
  ret double %limit

done:
  ret double %acc.next
}

define double @newton_sqrt(double %a) {
entry:
  %pos = fcmp ogt double %a, 0.0
  br i1 %pos, label %iter, label %zero

iter:
  %x = phi double [ %a, %entry ], [ %x.next, %iter ]
  %n = phi i32 [ 0, %entry ], [ %n.next, %iter ]
  %q = fdiv double %a, %x
  %s = fadd double %x, %q
  %x.next = fmul double %s, 5.000000e-01
  %n.next = add nuw nsw i32 %n, 1
  %again = icmp ult i32 %n.next, 20
  br i1 %again, label %iter, label %out

out:
  ret double %x.next

zero:
  ret double 0.0
}

define i32 @count_small(ptr %v, i32 %n) {
entry:
  %cnt = alloca i32, align 4
  store i32 0, ptr %cnt, align 4
  br label %head

head:
  %i = phi i32 [ 0, %entry ], [ %inc, %latch ]
  %lt = icmp slt i32 %i, %n
  br i1 %lt, label %body, label %exit

body:
  %idx = sext i32 %i to i64
  %p = getelementptr inbounds i32, ptr %v, i64 %idx
  %x = load i32, ptr %p, align 4
  %small = icmp slt i32 %x, 10
  br i1 %small, label %bump, label %latch

bump:
  %c = load i32, ptr %cnt, align 4
  %c1 = add nsw i32 %c, 1
  store i32 %c1, ptr %cnt, align 4
  br label %latch

latch:
  %inc = add nsw i32 %i, 1
  br label %head

exit:
  %r = load i32, ptr %cnt, align 4
  ret i32 %r
}
