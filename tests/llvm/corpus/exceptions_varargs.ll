; Exception handling and friends: invoke/landingpad (cleanup, catch,
; filter)/resume, personality functions, va_start/va_arg/va_end, gc
; strategies, prefix and prologue data, callbr-free unwinding.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%va_list = type { i32, i32, ptr, ptr }

@typeinfo.int = external constant ptr
@typeinfo.double = external constant ptr

declare i32 @__gxx_personality_v0(...)
declare void @may_throw(i32)
declare ptr @__cxa_begin_catch(ptr)
declare void @__cxa_end_catch()
declare i32 @llvm.eh.typeid.for.p0(ptr)
declare void @llvm.va_start.p0(ptr)
declare void @llvm.va_end.p0(ptr)
declare void @llvm.va_copy.p0(ptr, ptr)

define i32 @try_catch(i32 %x) personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw(i32 %x)
          to label %ok unwind label %lpad

ok:
  invoke void @may_throw(i32 1)
          to label %done unwind label %lpad

done:
  ret i32 0

lpad:
  %lp = landingpad { ptr, i32 }
          catch ptr @typeinfo.int
          catch ptr null
  %exn = extractvalue { ptr, i32 } %lp, 0
  %sel = extractvalue { ptr, i32 } %lp, 1
  %tid = call i32 @llvm.eh.typeid.for.p0(ptr @typeinfo.int)
  %match = icmp eq i32 %sel, %tid
  br i1 %match, label %catch, label %rethrow

catch:
  %obj = call ptr @__cxa_begin_catch(ptr %exn)
  %v = load i32, ptr %obj, align 4
  call void @__cxa_end_catch()
  ret i32 %v

rethrow:
  resume { ptr, i32 } %lp
}

define void @cleanup_only() personality ptr @__gxx_personality_v0 {
entry:
  %r = invoke i32 @try_catch(i32 3)
          to label %cont unwind label %cleanup

cont:
  ret void

cleanup:
  %lp = landingpad { ptr, i32 }
          cleanup
  resume { ptr, i32 } %lp
}

define void @filter() personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw(i32 9)
          to label %cont unwind label %lpad

cont:
  ret void

lpad:
  %lp = landingpad { ptr, i32 }
          cleanup
          filter [2 x ptr] [ptr @typeinfo.int, ptr @typeinfo.double]
  resume { ptr, i32 } %lp
}

define double @sum_varargs(i32 %count, ...) {
entry:
  %ap = alloca %va_list, align 8
  %ap2 = alloca %va_list, align 8
  call void @llvm.va_start.p0(ptr %ap)
  call void @llvm.va_copy.p0(ptr %ap2, ptr %ap)
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %body ]
  %acc = phi double [ 0.0, %entry ], [ %acc.next, %body ]
  %more = icmp slt i32 %i, %count
  br i1 %more, label %body, label %done

body:
  %v = va_arg ptr %ap, double
  %acc.next = fadd double %acc, %v
  %i.next = add i32 %i, 1
  br label %loop

done:
  %extra = va_arg ptr %ap2, i32
  call void @llvm.va_end.p0(ptr %ap2)
  call void @llvm.va_end.p0(ptr %ap)
  ret double %acc
}

define ptr @gc_managed(ptr addrspace(1) %obj) gc "statepoint-example" {
  %p = addrspacecast ptr addrspace(1) %obj to ptr
  ret ptr %p
}

define void @shadow_stack() gc "shadow-stack" {
  ret void
}

define i32 @with_prefix(i32 %x) prefix i32 123 {
  ret i32 %x
}

define i32 @with_prologue(i32 %x) prologue { i8, i8 } { i8 -21, i8 8 } {
  ret i32 %x
}

define void @both() prefix [2 x i8] c"ab" prologue i8 -112 {
  ret void
}
