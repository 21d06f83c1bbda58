; Calls and attributes: tail/musttail/notail, calling conventions,
; fast-math on calls, parameter/return attributes, memory(...) effects,
; attribute groups with string attributes, operand bundles, indirect calls.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%Big = type { [8 x i64] }

declare noundef i32 @callee(i32 noundef, ptr nonnull dereferenceable(16) align 8) #0
declare noalias nonnull ptr @alloc(i64 range(i64 1, 4096)) #1
declare void @consume(ptr byval(%Big) align 8, ptr sret(%Big) align 8, ptr captures(none) readonly) #2
declare zeroext i8 @ext(i8 signext, i16 zeroext, i1 inreg)
declare range(i32 0, 10) i32 @digit(ptr noundef readonly dereferenceable_or_null(4) captures(address) %s) #3
declare fastcc double @fast(double)
declare coldcc void @cold_path()
declare x86_vectorcallcc <2 x double> @vec(<2 x double>)
declare cc 64 void @numbered_cc()
declare ptx_kernel void @a_ptx_kernel()
declare void @writer(ptr writeonly noalias captures(none), ptr nofree nonnull) #4
declare i32 @printf(ptr noundef, ...) #5
declare void @swifty(ptr swiftself, ptr swifterror)
declare ptr @returns_arg(ptr returned)
declare nofpclass(nan inf) float @nofp(float nofpclass(zero))
declare void @initializes(ptr initializes((0, 4), (8, 12)))
declare void @dead_on_unwind(ptr dead_on_unwind writable)
declare void @bundled(i32)

define i32 @caller(i32 %x, ptr %p) #6 {
entry:
  %a = call i32 @callee(i32 %x, ptr %p)
  %b = tail call i32 @callee(i32 %a, ptr nonnull %p) #7
  %c = notail call i32 @callee(i32 %b, ptr %p)
  %mem = call noalias ptr @alloc(i64 64)
  %d = call fastcc double @fast(double 1.0)
  %e = call fast double @fast(double %d)
  %f = call nnan ninf double @fast(double %e)
  call coldcc void @cold_path() #8
  %v = call x86_vectorcallcc <2 x double> @vec(<2 x double> zeroinitializer)
  call cc 64 void @numbered_cc()
  %g = call zeroext i8 @ext(i8 signext -1, i16 zeroext 2, i1 inreg true)
  %h = call i32 (ptr, ...) @printf(ptr @.fmt, i32 %x, double %d)
  %i = call range(i32 0, 10) i32 @digit(ptr %p)
  call void @bundled(i32 0) [ "deopt"(i32 %x, ptr %p), "cold"() ]
  call void @bundled(i32 1) [ "align"(ptr %p, i64 16) ]
  %fp = select i1 true, ptr @callee, ptr @callee
  %j = call i32 %fp(i32 %i, ptr %p)
  %k = call i32 @musttail_wrapper(i32 %j, ptr %p)
  ret i32 %k
}

define i32 @musttail_wrapper(i32 %x, ptr %p) {
  %r = musttail call i32 @callee(i32 %x, ptr %p)
  ret i32 %r
}

define fastcc i64 @fib(i64 %n) #9 {
entry:
  %small = icmp ult i64 %n, 2
  br i1 %small, label %base, label %rec

base:
  ret i64 %n

rec:
  %n1 = sub i64 %n, 1
  %n2 = sub i64 %n, 2
  %f1 = call fastcc i64 @fib(i64 %n1)
  %f2 = tail call fastcc i64 @fib(i64 %n2)
  %s = add i64 %f1, %f2
  ret i64 %s
}

define void @sret_user(ptr noalias sret(%Big) align 8 %out, ptr byval(%Big) align 8 %in) {
  call void @llvm.memcpy.p0.p0.i64(ptr align 8 %out, ptr align 8 %in, i64 64, i1 false)
  ret void
}

define internal void @assume_user(ptr %p) {
  call void @llvm.assume(i1 true) [ "nonnull"(ptr %p), "align"(ptr %p, i64 8) ]
  ret void
}

declare void @llvm.memcpy.p0.p0.i64(ptr noalias writeonly captures(none), ptr noalias readonly captures(none), i64, i1 immarg)
declare void @llvm.assume(i1 noundef)

@.fmt = private unnamed_addr constant [7 x i8] c"%d %f\0A\00", align 1

attributes #0 = { nounwind willreturn memory(argmem: read) }
attributes #1 = { nounwind allockind("alloc,uninitialized") allocsize(0) "alloc-family"="malloc" }
attributes #2 = { memory(readwrite, inaccessiblemem: none) }
attributes #3 = { nounwind memory(read) uwtable }
attributes #4 = { memory(argmem: write) nosync nounwind }
attributes #5 = { nofree nounwind }
attributes #6 = { noinline optnone "frame-pointer"="all" "target-cpu"="x86-64" }
attributes #7 = { nounwind }
attributes #8 = { cold noreturn }
attributes #9 = { nounwind readnone "no-trapping-math"="true" "denormal-fp-math"="preserve-sign,preserve-sign" mustprogress norecurse }
