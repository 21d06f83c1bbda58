; Floating-point arithmetic: every binary op, fneg, every fast-math flag
; (alone and combined), every fcmp predicate, and a dot-product loop.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define double @fbinops(double %a, double %b) {
  %add = fadd double %a, %b
  %sub = fsub nnan double %add, %b
  %mul = fmul ninf double %sub, %a
  %div = fdiv nsz double %mul, %b
  %rem = frem arcp double %div, 3.0
  %c = fadd contract double %rem, 1.0
  %d = fmul afn double %c, %c
  %e = fsub reassoc double %d, %a
  %f = fadd fast double %e, %b
  %g = fmul nnan ninf nsz double %f, 2.5
  %h = fdiv reassoc contract double %g, 0x3FB999999999999A
  %n = fneg double %h
  %n2 = fneg nnan nsz double %n
  ret double %n2
}

define float @fsingle(float %x) {
  %y = fmul float %x, 0x3FF8000000000000
  %z = fadd nsz arcp contract afn float %y, -0.000000e+00
  ret float %z
}

define i1 @fpredicates(double %a, double %b) {
  %f = fcmp false double %a, %b
  %oeq = fcmp oeq double %a, %b
  %ogt = fcmp ogt double %a, %b
  %oge = fcmp oge double %a, %b
  %olt = fcmp olt double %a, %b
  %ole = fcmp ole double %a, %b
  %one = fcmp one double %a, %b
  %ord = fcmp ord double %a, %b
  %ueq = fcmp ueq double %a, %b
  %ugt = fcmp ugt double %a, %b
  %uge = fcmp uge double %a, %b
  %ult = fcmp ult double %a, %b
  %ule = fcmp ule double %a, %b
  %une = fcmp une double %a, %b
  %uno = fcmp uno double %a, %b
  %t = fcmp true double %a, %b
  %fast = fcmp fast olt double %a, %b
  %nnan = fcmp nnan oge double %a, 0.0
  %r0 = or i1 %f, %oeq
  %r1 = or i1 %r0, %ogt
  %r2 = or i1 %r1, %oge
  %r3 = xor i1 %r2, %olt
  %r4 = or i1 %r3, %ole
  %r5 = and i1 %r4, %one
  %r6 = or i1 %r5, %ord
  %r7 = xor i1 %r6, %ueq
  %r8 = or i1 %r7, %ugt
  %r9 = and i1 %r8, %uge
  %r10 = or i1 %r9, %ult
  %r11 = xor i1 %r10, %ule
  %r12 = or i1 %r11, %une
  %r13 = and i1 %r12, %uno
  %r14 = or i1 %r13, %t
  %r15 = xor i1 %r14, %fast
  %r16 = and i1 %r15, %nnan
  ret i1 %r16
}

define double @dot(ptr noalias readonly %x, ptr noalias readonly %y, i64 %n) {
entry:
  %has = icmp sgt i64 %n, 0
  br i1 %has, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi double [ 0.0, %entry ], [ %acc.next, %loop ]
  %px = getelementptr inbounds double, ptr %x, i64 %i
  %py = getelementptr inbounds double, ptr %y, i64 %i
  %vx = load double, ptr %px, align 8
  %vy = load double, ptr %py, align 8
  %prod = fmul fast double %vx, %vy
  %acc.next = fadd fast double %acc, %prod
  %i.next = add nuw nsw i64 %i, 1
  %cont = icmp slt i64 %i.next, %n
  br i1 %cont, label %loop, label %exit

exit:
  %r = phi double [ 0.0, %entry ], [ %acc.next, %loop ]
  ret double %r
}

define void @axpy(double %alpha, ptr noalias readonly %x, ptr noalias %y, i64 %n) {
entry:
  br label %cond

cond:
  %i = phi i64 [ 0, %entry ], [ %inc, %body ]
  %lt = icmp slt i64 %i, %n
  br i1 %lt, label %body, label %end

body:
  %px = getelementptr inbounds nuw double, ptr %x, i64 %i
  %py = getelementptr inbounds nuw double, ptr %y, i64 %i
  %vx = load double, ptr %px, align 8
  %vy = load double, ptr %py, align 8
  %t = fmul contract double %alpha, %vx
  %s = fadd contract double %t, %vy
  store double %s, ptr %py, align 8
  %inc = add nsw i64 %i, 1
  br label %cond

end:
  ret void
}

define <2 x double> @fvec(<2 x double> %a) {
  %m = fmul nnan <2 x double> %a, <double 2.0, double 0.5>
  %n = fneg <2 x double> %m
  %c = fcmp ult <2 x double> %n, zeroinitializer
  %s = select nnan <2 x i1> %c, <2 x double> %a, <2 x double> %n
  ret <2 x double> %s
}
