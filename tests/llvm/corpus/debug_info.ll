; Debug info: DICompileUnit, DIFile, DISubprogram (definition and
; declaration), DISubroutineType, DIBasicType, DIDerivedType,
; DICompositeType, DILocalVariable, DILexicalBlock, DILocation with
; inlinedAt, DIExpression operations, #dbg_value/#dbg_declare records,
; DIGlobalVariableExpression.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@counter = global i32 0, align 4, !dbg !40

define double @norm2(ptr %x, i64 %n) !dbg !10 {
entry:
  %tmp = alloca double, align 8
    #dbg_declare(ptr %tmp, !19, !DIExpression(), !21)
    #dbg_value(ptr %x, !17, !DIExpression(), !21)
    #dbg_value(i64 %n, !18, !DIExpression(), !21)
  br label %loop, !dbg !22

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ], !dbg !23
  %acc = phi double [ 0.0, %entry ], [ %acc.next, %loop ]
    #dbg_value(i64 %i, !20, !DIExpression(), !23)
  %p = getelementptr inbounds double, ptr %x, i64 %i, !dbg !24
  %v = load double, ptr %p, align 8, !dbg !24
  %sq = fmul double %v, %v, !dbg !34
  %chk = call double @square(double %v), !dbg !25
  %acc.next = fadd double %acc, %sq, !dbg !27
  %i.next = add nuw i64 %i, 1, !dbg !28
    #dbg_value(i64 %i, !20, !DIExpression(DW_OP_plus_uconst, 1, DW_OP_stack_value), !28)
  %done = icmp uge i64 %i.next, %n, !dbg !28
  br i1 %done, label %exit, label %loop, !dbg !28

exit:
  store double %acc.next, ptr %tmp, align 8, !dbg !29
    #dbg_value(double poison, !19, !DIExpression(DW_OP_LLVM_fragment, 0, 32), !29)
  ret double %acc.next, !dbg !29
}

define internal double @square(double %y) !dbg !30 {
entry:
    #dbg_value(double %y, !33, !DIExpression(), !43)
  %r = fmul double %y, %y, !dbg !43
  ret double %r, !dbg !43
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!6, !7, !8}
!llvm.ident = !{!9}

!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "handwritten", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, enums: !2, globals: !39, splitDebugInlining: false, nameTableKind: None)
!1 = !DIFile(filename: "norm.c", directory: "/tmp/src", checksumkind: CSK_MD5, checksum: "00112233445566778899aabbccddeeff")
!2 = !{}
!3 = !DIBasicType(name: "double", size: 64, encoding: DW_ATE_float)
!4 = !DIBasicType(name: "long", size: 64, encoding: DW_ATE_signed)
!5 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !36, size: 64)
!6 = !{i32 7, !"Dwarf Version", i32 5}
!7 = !{i32 2, !"Debug Info Version", i32 3}
!8 = !{i32 1, !"wchar_size", i32 4}
!9 = !{!"handwritten"}
!10 = distinct !DISubprogram(name: "norm2", scope: !1, file: !1, line: 3, type: !11, scopeLine: 3, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !16)
!11 = !DISubroutineType(types: !12)
!12 = !{!3, !5, !4}
!16 = !{!17, !18, !19, !20}
!17 = !DILocalVariable(name: "x", arg: 1, scope: !10, file: !1, line: 3, type: !5)
!18 = !DILocalVariable(name: "n", arg: 2, scope: !10, file: !1, line: 3, type: !4)
!19 = !DILocalVariable(name: "tmp", scope: !10, file: !1, line: 4, type: !3)
!20 = !DILocalVariable(name: "i", scope: !26, file: !1, line: 5, type: !4)
!21 = !DILocation(line: 3, column: 1, scope: !10)
!22 = !DILocation(line: 5, column: 3, scope: !10)
!23 = !DILocation(line: 5, column: 8, scope: !26)
!24 = !DILocation(line: 6, column: 20, scope: !26)
!25 = !DILocation(line: 6, column: 12, scope: !26)
!26 = distinct !DILexicalBlock(scope: !10, file: !1, line: 5, column: 3)
!27 = !DILocation(line: 6, column: 9, scope: !26)
!28 = !DILocation(line: 5, column: 25, scope: !26)
!29 = !DILocation(line: 8, column: 3, scope: !10, isImplicitCode: true)
!30 = distinct !DISubprogram(name: "square", linkageName: "_square", scope: !1, file: !1, line: 1, type: !31, scopeLine: 1, flags: DIFlagPrototyped | DIFlagArtificial, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition, unit: !0, retainedNodes: !2)
!31 = !DISubroutineType(types: !32)
!32 = !{!3, !3}
!33 = !DILocalVariable(name: "y", arg: 1, scope: !30, file: !1, line: 1, type: !3)
!34 = !DILocation(line: 1, column: 30, scope: !30, inlinedAt: !35)
!35 = distinct !DILocation(line: 6, column: 12, scope: !26)
!36 = !DIDerivedType(tag: DW_TAG_const_type, baseType: !37)
!37 = !DICompositeType(tag: DW_TAG_array_type, baseType: !3, size: 256, elements: !38)
!38 = !{!DISubrange(count: 4)}
!39 = !{!40}
!40 = !DIGlobalVariableExpression(var: !41, expr: !DIExpression())
!41 = distinct !DIGlobalVariable(name: "counter", scope: !0, file: !1, line: 1, type: !42, isLocal: false, isDefinition: true)
!42 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!43 = !DILocation(line: 1, column: 30, scope: !30)
