; Integer arithmetic: every binary operator, wrap/exact/disjoint flags,
; every icmp predicate (with samesign), and a summation loop.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define i32 @binops(i32 %a, i32 %b) {
entry:
  %add = add i32 %a, %b
  %add.nsw = add nsw i32 %add, 1
  %add.nuw = add nuw i32 %add.nsw, 2
  %add.both = add nuw nsw i32 %add.nuw, %b
  %sub = sub nsw i32 %add.both, %a
  %mul = mul nuw nsw i32 %sub, 3
  %udiv = udiv exact i32 %mul, 3
  %sdiv = sdiv i32 %udiv, %b
  %sdiv.exact = sdiv exact i32 %sdiv, 7
  %urem = urem i32 %sdiv.exact, 13
  %srem = srem i32 %urem, %a
  %shl = shl nuw nsw i32 %srem, 2
  %lshr = lshr exact i32 %shl, 1
  %ashr = ashr i32 %lshr, 1
  %and = and i32 %ashr, 255
  %or = or disjoint i32 %and, 256
  %or2 = or i32 %or, %a
  %xor = xor i32 %or2, -1
  ret i32 %xor
}

define i128 @wide(i128 %x, i7 %small) {
  %z = zext i7 %small to i128
  %m = mul i128 %x, 170141183460469231731687303715884105727
  %r = add i128 %m, %z
  ret i128 %r
}

define i1 @predicates(i32 %a, i32 %b, ptr %p, ptr %q) {
  %eq = icmp eq i32 %a, %b
  %ne = icmp ne i32 %a, %b
  %ugt = icmp ugt i32 %a, %b
  %uge = icmp uge i32 %a, %b
  %ult = icmp ult i32 %a, %b
  %ule = icmp samesign ule i32 %a, %b
  %sgt = icmp sgt i32 %a, %b
  %sge = icmp sge i32 %a, %b
  %slt = icmp samesign slt i32 %a, %b
  %sle = icmp sle i32 %a, %b
  %peq = icmp eq ptr %p, %q
  %pnull = icmp ne ptr %p, null
  %r0 = and i1 %eq, %ne
  %r1 = or i1 %r0, %ugt
  %r2 = xor i1 %r1, %uge
  %r3 = and i1 %r2, %ult
  %r4 = or i1 %r3, %ule
  %r5 = and i1 %r4, %sgt
  %r6 = or i1 %r5, %sge
  %r7 = xor i1 %r6, %slt
  %r8 = and i1 %r7, %sle
  %r9 = or i1 %r8, %peq
  %r10 = and i1 %r9, %pnull
  ret i1 %r10
}

define i64 @sum_array(ptr noalias readonly %a, i64 %n) {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi i64 [ 0, %entry ], [ %acc.next, %loop ]
  %gep = getelementptr inbounds i64, ptr %a, i64 %i
  %v = load i64, ptr %gep, align 8
  %sq = mul nsw i64 %v, %v
  %acc.next = add nsw i64 %acc, %sq
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi i64 [ 0, %entry ], [ %acc.next, %loop ]
  ret i64 %res
}

define i32 @gcd(i32 %a, i32 %b) {
entry:
  br label %head

head:
  %x = phi i32 [ %a, %entry ], [ %y, %body ]
  %y = phi i32 [ %b, %entry ], [ %r, %body ]
  %zero = icmp eq i32 %y, 0
  br i1 %zero, label %done, label %body

body:
  %r = urem i32 %x, %y
  br label %head

done:
  ret i32 %x
}

define <4 x i32> @vector_int(<4 x i32> %a, <4 x i32> %b) {
  %s = add nsw <4 x i32> %a, %b
  %m = mul <4 x i32> %s, <i32 1, i32 2, i32 3, i32 4>
  %sh = shl <4 x i32> %m, splat (i32 1)
  %c = icmp slt <4 x i32> %sh, zeroinitializer
  %r = select <4 x i1> %c, <4 x i32> %a, <4 x i32> %sh
  ret <4 x i32> %r
}
