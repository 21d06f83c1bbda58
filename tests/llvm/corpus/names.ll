; Names: quoted global and local names with spaces, dots, quotes, escapes
; and non-ASCII bytes; numeric-looking quoted names; unnamed globals (@0),
; unnamed values and blocks mixed with named ones; names that look like
; keywords; quoted struct type names.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%"type with space" = type { i32, ptr }
%"class.std::vector<double>" = type { ptr, ptr, ptr }
%0 = type { i8, i16 }

@"weird name" = global i32 1
@"quote\22inside" = global i32 2
@"back\5Cslash" = global i32 3
@"\E2\82\AC" = global i32 4
@"123" = global i32 5
@0 = private constant [4 x i8] c"abc\00"
@1 = internal global %0 zeroinitializer
@a.b.c = global i32 6
@_ZN3foo3barEv.llvm.123 = global i32 7
@"$dollar" = global i32 8
@-dash = global i32 9

define i32 @"function with spaces"(i32 %"a.b", i32 %"c d", i32 %"quote\22") {
"entry block":
  %"sum 1" = add i32 %"a.b", %"c d"
  %"x.y" = mul i32 %"sum 1", %"quote\22"
  br label %"next:block"

"next:block":
  %"\01raw" = add i32 %"x.y", 1
  ret i32 %"\01raw"
}

define i32 @mixed(i32 %0, i32 %named, i32 %2) {
  %4 = add i32 %0, %named
  %x = add i32 %4, %2
  %5 = mul i32 %x, %x
  br label %6

6:
  %7 = phi i32 [ %5, %3 ], [ %9, %8 ]
  %cmp = icmp slt i32 %7, 100
  br i1 %cmp, label %8, label %exit

8:
  %9 = shl i32 %7, 1
  br label %6

exit:
  ret i32 %7
}

define void @keywords(i32 %add, i32 %ret, ptr %label) {
define:
  %br = add i32 %add, %ret
  %i32 = add i32 %br, 1
  store i32 %i32, ptr %label, align 4
  br label %void

void:
  ret void
}

define i64 @uses(ptr %"ptr.in") {
  %v1 = load i32, ptr @"weird name", align 4
  %v2 = load i32, ptr @"\E2\82\AC", align 4
  %v3 = load i32, ptr @"123", align 4
  %s = load %"type with space", ptr %"ptr.in", align 8
  %f = extractvalue %"type with space" %s, 0
  %g = load i8, ptr @0, align 1
  %h = getelementptr inbounds %0, ptr @1, i32 0, i32 1
  %i = load i16, ptr %h, align 2
  %vec = load %"class.std::vector<double>", ptr %"ptr.in", align 8
  %r = call i32 @"function with spaces"(i32 %v1, i32 %v2, i32 %v3)
  %gi = zext i8 %g to i32
  %ii = zext i16 %i to i32
  %t0 = add i32 %r, %f
  %t1 = add i32 %t0, %gi
  %t2 = add i32 %t1, %ii
  %t3 = call i32 @2(i32 %t2)
  %w = sext i32 %t3 to i64
  ret i64 %w
}

define internal i32 @2(i32 %x) {
  ret i32 %x
}
