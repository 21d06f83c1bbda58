; Globals: every linkage, visibility, DLL storage, thread_local model,
; unnamed_addr, section, partition, alignment, comdat, externally_initialized,
; address spaces, aliases, ifuncs, global ctors, function linkages.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

$grp = comdat any
$exact = comdat exactmatch
$largest = comdat largest
$nodup = comdat nodeduplicate
$samesize = comdat samesize
$inline_me = comdat any
$lo.odr = comdat any

@ext = external global i32
@ext.weak = extern_weak global i32
@priv = private global i32 1
@intern = internal global i32 2
@avail = available_externally global i32 3
@lo = linkonce global i32 4, comdat($grp)
@weak = weak global i32 5
@common = common global i32 0, align 4
@appending = appending global [1 x ptr] [ptr @intern]
@lo.odr = linkonce_odr global i32 6, comdat
@weak.odr = weak_odr global i32 7, comdat($exact)
@default = global i32 8
@hidden = hidden global i32 9, comdat($largest)
@protected = protected global i32 10, comdat($nodup)
@dllimp = external dllimport global i32
@dllexp = dllexport global i32 11, comdat($samesize)
@tls = thread_local global i32 12
@tls.gd = thread_local(localdynamic) global i32 13
@tls.ie = thread_local(initialexec) global i32 14
@tls.le = thread_local(localexec) global i32 15
@una = unnamed_addr constant i32 16
@luna = local_unnamed_addr global i32 17
@sect = global i32 18, section ".mydata", align 64
@part = global i32 19, partition "part1"
@extinit = externally_initialized global i32 20
@as1 = addrspace(1) global float 1.0, align 4
@as3 = internal addrspace(3) global [32 x float] undef, align 16
@const.hidden = hidden unnamed_addr constant [3 x i8] c"ab\00", section ".rodata.str", align 1
@dso = dso_local global i32 21
@preempt = dso_preemptable global i32 22
@code.model = global i32 23, code_model "large"
@sanitized = global i32 24, no_sanitize_address
@attrs = global i32 25 #0
@llvm.used = appending global [1 x ptr] [ptr @priv], section "llvm.metadata"
@llvm.compiler.used = appending global [1 x ptr] [ptr @intern], section "llvm.metadata"
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @init, ptr null }]

@alias = alias i32, ptr @default
@alias.priv = private alias i32, ptr @intern
@alias.hidden = hidden alias i32, ptr @weak
@alias.weak = weak alias i32, ptr @default
@alias.gep = alias i32, getelementptr (i8, ptr @sect, i64 0)
@alias.tls = thread_local alias i32, ptr @tls
@alias.fn = internal unnamed_addr alias void (), ptr @init
@ifunc = ifunc i32 (i32), ptr @resolver

define internal void @init() {
  store i32 42, ptr @intern, align 4
  ret void
}

define ptr @resolver() {
  ret ptr @impl
}

define private i32 @impl(i32 %x) {
  ret i32 %x
}

define linkonce_odr hidden i32 @inline_me(i32 %x) comdat {
  %y = add i32 %x, 1
  ret i32 %y
}

define weak protected i32 @weak_fn() section ".text.hot" align 32 {
  ret i32 0
}

define available_externally i32 @avail_fn() {
  ret i32 1
}

define dso_local dllexport void @exported() unnamed_addr {
  ret void
}

declare extern_weak void @maybe()

define i32 @use_all() local_unnamed_addr {
  %a = load i32, ptr @ext, align 4
  %b = load i32, ptr @alias, align 4
  %c = call i32 @ifunc(i32 %a)
  %d = call i32 @inline_me(i32 %b)
  %t = call ptr @llvm.threadlocal.address.p0(ptr @tls)
  %e = load i32, ptr %t, align 4
  %f = load float, ptr addrspace(1) @as1, align 4
  %g = fptosi float %f to i32
  call void @alias.fn()
  %h = call i32 @weak_fn()
  %s0 = add i32 %c, %d
  %s1 = add i32 %s0, %e
  %s2 = add i32 %s1, %g
  %s3 = add i32 %s2, %h
  ret i32 %s3
}

declare ptr @llvm.threadlocal.address.p0(ptr)

attributes #0 = { "bss-section"=".mybss" }
