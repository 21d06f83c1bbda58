; Control flow: br, switch, indirectbr with blockaddress, unreachable,
; phi with repeated predecessors, select, unnamed values and blocks.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@dispatch = internal constant [3 x ptr] [ptr blockaddress(@interp, %op.add), ptr blockaddress(@interp, %op.mul), ptr blockaddress(@interp, %op.halt)]

define i32 @classify(i32 %x) {
entry:
  switch i32 %x, label %other [
    i32 0, label %zero
    i32 1, label %small
    i32 2, label %small
    i32 -7, label %neg
  ]

zero:
  br label %join

small:
  br label %join

neg:
  br label %join

other:
  %big = icmp sgt i32 %x, 100
  br i1 %big, label %join, label %join

join:
  %r = phi i32 [ 10, %zero ], [ 20, %small ], [ 30, %neg ], [ 40, %other ], [ 40, %other ]
  ret i32 %r
}

define i32 @interp(ptr %code, i32 %acc0) {
entry:
  br label %fetch

fetch:
  %pc = phi i64 [ 0, %entry ], [ %pc.next, %op.add ], [ %pc.next, %op.mul ]
  %acc = phi i32 [ %acc0, %entry ], [ %sum, %op.add ], [ %prod, %op.mul ]
  %p = getelementptr inbounds i8, ptr %code, i64 %pc
  %op = load i8, ptr %p, align 1
  %opx = zext i8 %op to i64
  %slot = getelementptr inbounds [3 x ptr], ptr @dispatch, i64 0, i64 %opx
  %target = load ptr, ptr %slot, align 8
  %pc.next = add i64 %pc, 1
  indirectbr ptr %target, [label %op.add, label %op.mul, label %op.halt]

op.add:
  %sum = add i32 %acc, 1
  br label %fetch

op.mul:
  %prod = mul i32 %acc, 2
  br label %fetch

op.halt:
  ret i32 %acc
}

define i32 @unnamed(i32 %0, i32 %1) {
  %3 = icmp slt i32 %0, %1
  br i1 %3, label %4, label %6

4:
  %5 = sub nsw i32 %1, %0
  br label %8

6:
  %7 = sub nsw i32 %0, %1
  br label %8

8:
  %9 = phi i32 [ %5, %4 ], [ %7, %6 ]
  ret i32 %9
}

define i32 @must_be_positive(i32 %x) {
entry:
  %ok = icmp sgt i32 %x, 0
  br i1 %ok, label %fine, label %bad

fine:
  ret i32 %x

bad:
  unreachable
}

define float @clamp(float %x, float %lo, float %hi) {
  %lt = fcmp olt float %x, %lo
  %a = select i1 %lt, float %lo, float %x
  %gt = fcmp ogt float %a, %hi
  %b = select nnan ninf i1 %gt, float %hi, float %a
  ret float %b
}

define i64 @collatz_steps(i64 %n) {
entry:
  br label %loop

loop:
  %x = phi i64 [ %n, %entry ], [ %next, %latch ]
  %steps = phi i64 [ 0, %entry ], [ %steps.next, %latch ]
  %one = icmp ule i64 %x, 1
  br i1 %one, label %done, label %step

step:
  %odd = and i64 %x, 1
  %isodd = icmp ne i64 %odd, 0
  br i1 %isodd, label %odd.case, label %even.case

odd.case:
  %t = mul i64 %x, 3
  %t1 = add i64 %t, 1
  br label %latch

even.case:
  %h = lshr i64 %x, 1
  br label %latch

latch:
  %next = phi i64 [ %t1, %odd.case ], [ %h, %even.case ]
  %steps.next = add i64 %steps, 1
  br label %loop

done:
  ret i64 %steps
}

define void @empty_switch(i8 %x) {
  switch i8 %x, label %out []

out:
  ret void
}
