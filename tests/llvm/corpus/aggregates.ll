; Struct and array types: named, literal, packed, opaque, recursive via ptr,
; nested arrays; extractvalue/insertvalue; returning aggregates.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%Complex = type { double, double }
%Packed = type <{ i8, i32, i16 }>
%Opaque = type opaque
%Node = type { i64, ptr, ptr }
%Matrix = type { i64, i64, [0 x double] }
%Nested = type { %Complex, [2 x [3 x float]], <2 x i64>, { i1, ptr } }
%"struct.ns::Thing" = type { i32, %Packed }
%Empty = type {}

@origin = global %Complex zeroinitializer
@packed = global %Packed <{ i8 1, i32 2, i16 3 }>, align 1
@table = constant [2 x [3 x i32]] [[3 x i32] [i32 1, i32 2, i32 3], [3 x i32] [i32 4, i32 5, i32 6]]
@thing = global %"struct.ns::Thing" { i32 7, %Packed <{ i8 0, i32 -1, i16 9 }> }
@opaque.ext = external global %Opaque
@empty = global %Empty zeroinitializer
@literal = global { i32, { float, [2 x i8] } } { i32 1, { float, [2 x i8] } { float 2.0, [2 x i8] c"hi" } }

define %Complex @cmul(%Complex %a, %Complex %b) {
  %ar = extractvalue %Complex %a, 0
  %ai = extractvalue %Complex %a, 1
  %br = extractvalue %Complex %b, 0
  %bi = extractvalue %Complex %b, 1
  %t0 = fmul double %ar, %br
  %t1 = fmul double %ai, %bi
  %re = fsub double %t0, %t1
  %t2 = fmul double %ar, %bi
  %t3 = fmul double %ai, %br
  %im = fadd double %t2, %t3
  %r0 = insertvalue %Complex poison, double %re, 0
  %r1 = insertvalue %Complex %r0, double %im, 1
  ret %Complex %r1
}

define { i64, i1 } @divmod_checked(i64 %a, i64 %b) {
entry:
  %z = icmp eq i64 %b, 0
  br i1 %z, label %fail, label %ok

ok:
  %q = sdiv i64 %a, %b
  %r0 = insertvalue { i64, i1 } undef, i64 %q, 0
  %r1 = insertvalue { i64, i1 } %r0, i1 true, 1
  ret { i64, i1 } %r1

fail:
  ret { i64, i1 } { i64 0, i1 false }
}

define [2 x i32] @array_ret(i32 %x) {
  %a = insertvalue [2 x i32] zeroinitializer, i32 %x, 1
  ret [2 x i32] %a
}

define float @nested_access(%Nested %n, ptr %m) {
  %f = extractvalue %Nested %n, 1, 1, 2
  %c = extractvalue %Nested %n, 0
  %re = extractvalue %Complex %c, 0
  %ref = fptrunc double %re to float
  %n2 = insertvalue %Nested %n, float %ref, 1, 0, 0
  %g = extractvalue %Nested %n2, 1, 0, 0
  %p = getelementptr inbounds %Matrix, ptr %m, i64 0, i32 2, i64 5
  %d = load double, ptr %p, align 8
  %df = fptrunc double %d to float
  %s0 = fadd float %f, %g
  %s1 = fadd float %s0, %df
  ret float %s1
}

define i64 @list_length(ptr %head) {
entry:
  br label %loop

loop:
  %node = phi ptr [ %head, %entry ], [ %next, %body ]
  %len = phi i64 [ 0, %entry ], [ %len.next, %body ]
  %isnull = icmp eq ptr %node, null
  br i1 %isnull, label %done, label %body

body:
  %nextp = getelementptr inbounds %Node, ptr %node, i32 0, i32 1
  %next = load ptr, ptr %nextp, align 8
  %len.next = add i64 %len, 1
  br label %loop

done:
  ret i64 %len
}

define i32 @packed_field(ptr %p) {
  %f = getelementptr inbounds %Packed, ptr %p, i32 0, i32 1
  %v = load i32, ptr %f, align 1
  %t = load %"struct.ns::Thing", ptr @thing, align 4
  %w = extractvalue %"struct.ns::Thing" %t, 1, 1
  %r = add i32 %v, %w
  ret i32 %r
}

define void @store_aggregate(ptr %out, double %x) {
  %c = insertvalue %Complex { double 0.0, double 1.0 }, double %x, 0
  store %Complex %c, ptr %out, align 8
  %arr = load [2 x [3 x i32]], ptr @table, align 4
  %e = extractvalue [2 x [3 x i32]] %arr, 1, 2
  ret void
}
