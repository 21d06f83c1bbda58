"""Round-trip tests of the LLVM IR model (``gpucompiler.llvm``).

The contract: for text ``t`` printed by LLVM,
``str(llvm.parse_assembly(str(parse(t)))) == str(llvm.parse_assembly(t))``,
and printing is idempotent: ``str(parse(str(parse(t)))) == str(parse(t))``.

Inputs: every module of ``corpus/`` as LLVM prints it, the same after LLVM's
O1/O2/O3 pipelines, and libdevice linked into a small NVPTX module. Malformed
text must raise ``IRParseError`` pointing at the offending line.
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from gpucompiler.errors import IRParseError, UnsupportedIRError

CORPUS = Path(__file__).parent / "corpus"
CORPUS_FILES = sorted(CORPUS.glob("*.ll"))
CORPUS_IDS = [p.stem for p in CORPUS_FILES]
OPT_LEVELS = [1, 2, 3]

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
NVPTX_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"


# --------------------------------------------------------------------------- helpers

@functools.cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def _llvm_module(text: str) -> llvm.ModuleRef:
    """LLVM's own parse of ``text``, verified.

    Each parse gets a fresh LLVMContext: in llvmlite's global context a second
    module naming ``%Complex`` would get ``%Complex.1``, and the printings of
    two parses of the same text would differ for no fault of the model.
    """
    _init()
    mod = llvm.parse_assembly(text, context=llvm.create_context())
    mod.verify()
    return mod


def _llvm_print(text: str) -> str:
    return str(_llvm_module(text))


def _target_machine(triple: str) -> llvm.TargetMachine:
    _init()
    return llvm.Target.from_triple(triple or llvm.get_process_triple()).create_target_machine()


def _optimize(mod: llvm.ModuleRef, level: int) -> None:
    """Run LLVM's default O``level`` pipeline on ``mod`` for the module's own triple."""
    tm = _target_machine(mod.triple)
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    mod.verify()


@functools.cache
def _corpus_text(stem: str) -> str:
    """The corpus module ``stem`` as LLVM prints it."""
    return _llvm_print((CORPUS / f"{stem}.ll").read_text())


@functools.cache
def _optimized_text(stem: str, level: int) -> str:
    mod = _llvm_module(_corpus_text(stem))
    _optimize(mod, level)
    return str(mod)


def _diff(expected: str, actual: str, what: str, context: int = 3, limit: int = 60) -> str:
    """A unified diff of the first differing lines, for assertion messages."""
    lines = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(),
                                      fromfile=f"{what} (expected)", tofile=f"{what} (actual)",
                                      n=context, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)


def _parse(text: str):
    """The model's parser (imported late: an ImportError fails the test, it does not skip)."""
    from gpucompiler.llvm import parse

    return parse(text)


def assert_roundtrips(text: str, what: str) -> None:
    """Check the model's contract on LLVM-printed ``text``."""
    expected = _llvm_print(text)
    ours = str(_parse(text))
    try:
        reparsed = _llvm_module(ours)
    except RuntimeError as exc:
        raise AssertionError(f"{what}: LLVM rejects the model's printing: {exc}\n"
                             + _diff(expected, ours, what)) from None
    again = str(reparsed)
    assert again == expected, (f"{what}: LLVM's reading of the model's printing differs from "
                               f"LLVM's reading of the input\n" + _diff(expected, again, what))
    twice = str(_parse(ours))
    assert twice == ours, f"{what}: printing is not idempotent\n" + _diff(ours, twice, what)


# --------------------------------------------------------------------------- the corpus itself

def test_corpus_is_large_enough():
    assert len(CORPUS_FILES) >= 15
    readme = (CORPUS / "README.md").read_text()
    for path in CORPUS_FILES:
        assert f"`{path.name}`" in readme, f"{path.name} is not described in corpus/README.md"


@pytest.mark.parametrize("stem", CORPUS_IDS)
def test_corpus_file_is_valid_llvm(stem):
    """Each corpus file parses and verifies, keeps its debug info, and survives O1-O3."""
    src = (CORPUS / f"{stem}.ll").read_text()
    printed = _corpus_text(stem)
    assert "define " in printed
    if "!DISubprogram" in src:
        # LLVM drops debug info it finds invalid (with only a warning): make sure it stayed.
        assert "!DISubprogram" in printed and "#dbg_value" in printed
    for level in OPT_LEVELS:
        assert "target triple" in _optimized_text(stem, level)


def test_optimisation_changes_loops():
    """The loop corpus gives the optimiser work: O2 promotes the -O0 allocas away."""
    before = _corpus_text("loops")
    after = _optimized_text("loops", 2)
    assert before.count("alloca") >= 4
    assert after.count("alloca") == 0
    assert after != before


# --------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("stem", CORPUS_IDS)
def test_roundtrip_corpus(stem):
    assert_roundtrips(_corpus_text(stem), stem)


@pytest.mark.parametrize("stem", CORPUS_IDS)
def test_roundtrip_corpus_as_written(stem):
    # written by hand, not printed by LLVM: numbered arguments with gaps (%0, %x, %2: the entry block is %3),
    # an alias of a constant expression without its type, as LLVM reads them
    assert_roundtrips((CORPUS / f"{stem}.ll").read_text(), f"{stem} as written")


def test_intrinsics_called_without_a_declaration_are_declared_as_llvm_declares_them():
    # LLVM declares them from the call; the model refused the text (use of undefined value)
    text = ("define double @f(double %x, ptr %p, ptr %q) {\n"
            "  %y = call double @llvm.fma.f64(double %x, double %x, double 1.0)\n"
            "  call void @llvm.memcpy.p0.p0.i64(ptr %p, ptr %q, i64 8, i1 false)\n"
            "  ret double %y\n}\n")
    assert_roundtrips(text, "undeclared intrinsics")
    with pytest.raises(IRParseError, match="use of undefined value @other"):
        _parse(text.replace("@llvm.fma.f64", "@other"))  # only intrinsics


def test_an_attribute_group_referenced_but_not_defined_prints_as_none():
    # LLVM reads it as no attributes and refuses `attributes #1 = {  }`, which the model printed
    text = "define void @f() #1 {\n  ret void\n}\n"
    assert_roundtrips(text, "undefined group")


@pytest.mark.parametrize("level", OPT_LEVELS, ids=[f"O{n}" for n in OPT_LEVELS])
@pytest.mark.parametrize("stem", CORPUS_IDS)
def test_roundtrip_optimized(stem, level):
    assert_roundtrips(_optimized_text(stem, level), f"{stem}@O{level}")


# --------------------------------------------------------------------------- libdevice

_LIBDEVICE_USER = f"""\
target datalayout = "{NVPTX_LAYOUT}"
target triple = "{NVPTX_TRIPLE}"

define ptx_kernel void @k(ptr addrspace(1) %out, float %x, double %y) {{
entry:
  %a = call float @__nv_sinf(float %x)
  %b = call float @__nv_expf(float %a)
  %c = call float @__nv_powf(float %b, float 2.5)
  %d = call double @__nv_log(double %y)
  %e = call double @__nv_erf(double %d)
  %f = fptrunc double %e to float
  %s0 = fadd float %c, %f
  %i = call i32 @__nv_float2int_rn(float %s0)
  %g = sitofp i32 %i to float
  store float %g, ptr addrspace(1) %out, align 4
  ret void
}}

declare float @__nv_sinf(float)
declare float @__nv_expf(float)
declare float @__nv_powf(float, float)
declare double @__nv_log(double)
declare double @__nv_erf(double)
declare i32 @__nv_float2int_rn(float)
"""


def _linked_libdevice(path: str) -> llvm.ModuleRef:
    _init()
    ctx = llvm.create_context()
    mod = llvm.parse_assembly(_LIBDEVICE_USER, context=ctx)
    lib = llvm.parse_bitcode(Path(path).read_bytes(), context=ctx)
    lib.triple = NVPTX_TRIPLE
    lib.data_layout = NVPTX_LAYOUT
    mod.link_in(lib)
    mod.verify()
    return mod


@pytest.fixture(scope="module")
def libdevice_trimmed(libdevice_path) -> str:
    """libdevice linked into a kernel, internalised and optimised down to what the kernel uses."""
    mod = _linked_libdevice(libdevice_path)
    for fn in mod.functions:
        if fn.name.startswith("__nv_") and not fn.is_declaration:
            fn.linkage = llvm.Linkage.internal
    _optimize(mod, 2)
    return str(mod)


def test_libdevice_trimmed_is_meaningful(libdevice_trimmed):
    assert "define ptx_kernel void @k" in libdevice_trimmed
    assert "declare float @__nv_sinf" not in libdevice_trimmed  # linked, then inlined
    assert libdevice_trimmed.count("\n") > 100  # the inlined math is there


def test_roundtrip_libdevice_linked(libdevice_trimmed):
    assert_roundtrips(libdevice_trimmed, "libdevice@O2")


def test_roundtrip_libdevice_linked_unoptimised(libdevice_path):
    """The whole of libdevice (~50k lines) as linked, before any optimisation."""
    text = str(_linked_libdevice(libdevice_path))
    assert text.count("define ") > 300
    assert_roundtrips(text, "libdevice")


# --------------------------------------------------------------------------- errors

_GOOD_PREFIX = """\
define i32 @ok(i32 %a) {
entry:
  %b = add i32 %a, 1
  ret i32 %b
}
"""

# (id, text, 1-based line of the error)
MALFORMED = [
    ("extra-closing-brace", _GOOD_PREFIX + "}\n", 6),
    ("unknown-opcode", """\
define i32 @f(i32 %a, i32 %b) {
entry:
  %c = add i32 %a, %b
  %d = frobnicate i32 %c, %b
  ret i32 %d
}
""", 4),
    ("bad-type", """\
@g = global i32 0

define void @f(ptr %p) {
  %v = load i33x, ptr %p
  ret void
}
""", 4),
    ("bad-type-in-signature", _GOOD_PREFIX + """\

define flaot @g(float %x) {
  ret float %x
}
""", 7),
    ("unknown-top-level", _GOOD_PREFIX + "\nfrobnicate @x = 1\n", 7),
]


@pytest.mark.parametrize("text,line", [(t, n) for _, t, n in MALFORMED], ids=[i for i, _, _ in MALFORMED])
def test_malformed_ir_reports_line(text, line):
    # LLVM agrees on the line, so the expectation is not ours alone.
    with pytest.raises(RuntimeError, match=rf"<string>:{line}:"):
        llvm.parse_assembly(text)
    with pytest.raises(IRParseError) as info:
        _parse(text)
    assert info.value.line == line, f"{info.value!s}"


def test_unclosed_function_body():
    text = _GOOD_PREFIX + """\

define i32 @open(i32 %a) {
entry:
  ret i32 %a
"""
    with pytest.raises(IRParseError) as info:
        _parse(text)
    assert info.value.line is not None and 7 <= info.value.line <= text.count("\n") + 1, str(info.value)


def test_unknown_top_level_entity_is_named():
    with pytest.raises(IRParseError) as info:
        _parse(_GOOD_PREFIX + "\nfrobnicate @x = 1\n")
    assert "frobnicate" in str(info.value)


# --------------------------------------------------------------------------- rare constructs

# Valid LLVM that a numerical/GPU compiler rarely meets. The model either
# round-trips each or refuses it with UnsupportedIRError naming the construct;
# it never drops text silently or fails some other way.
# id -> (the name the refusal must mention, module text)
RARE = {
"callbr": ("callbr", """define i32 @f(i32 %x) {
entry:
  %r = callbr i32 asm "", "=r,r,!i"(i32 %x)
          to label %fall [label %indirect]

fall:
  ret i32 %r

indirect:
  ret i32 0
}
"""),
"uselistorder": ("uselistorder", """@g = global i32 0

define ptr @f() {
  ret ptr @g
}

define ptr @h() {
  ret ptr @g
}

uselistorder ptr @g, { 1, 0 }
"""),
"summary": ("^0", """define void @f() {
  ret void
}

^0 = module: (path: "m.o", hash: (0, 0, 0, 0, 0))
"""),
"dso_local_equivalent": ("dso_local_equivalent", """declare void @ext()

define ptr @f() {
  ret ptr dso_local_equivalent @ext
}
"""),
"no_cfi": ("no_cfi", """declare void @ext()

define ptr @f() {
  ret ptr no_cfi @ext
}
"""),
"ptrauth": ("ptrauth", """@g = global i32 0
@p = global ptr ptrauth (ptr @g, i32 0)
"""),
"catchswitch": ("catchswitch", """declare i32 @__CxxFrameHandler3(...)
declare void @may_throw()

define void @f() personality ptr @__CxxFrameHandler3 {
entry:
  invoke void @may_throw()
          to label %ok unwind label %dispatch

dispatch:
  %cs = catchswitch within none [label %handler] unwind to caller

handler:
  %cp = catchpad within %cs [ptr null, i32 64, ptr null]
  catchret from %cp to label %ok

ok:
  ret void
}
"""),
}


@pytest.mark.parametrize("keyword,text", list(RARE.values()), ids=list(RARE))
def test_rare_construct_roundtrips_or_is_refused_by_name(keyword, text):
    _llvm_module(text)  # valid LLVM
    try:
        model = _parse(text)
    except UnsupportedIRError as exc:
        assert keyword in str(exc), f"refusal does not name {keyword!r}: {exc}"
        return
    if keyword in ("uselistorder", "^0"):
        # LLVM itself does not print these back; the model must keep the rest.
        assert str(_llvm_module(str(model))) == _llvm_print(text)
    else:
        assert_roundtrips(text, keyword)


def test_unsupported_construct_is_refused_by_name_and_line():
    """``uselistorder`` directives are valid LLVM the model does not keep: refused, never dropped."""
    text = RARE["uselistorder"][1]
    _llvm_module(text)
    with pytest.raises(UnsupportedIRError) as info:
        _parse(text)
    assert "uselistorder" in str(info.value)
    assert info.value.line == 11


def test_declaration_with_debug_attachment_roundtrips():
    """clang -g -O2 attaches ``!dbg`` to declarations of the functions it calls
    (``declare !dbg !20 double @sin(double)``): LLVM reads it before the type."""
    path = Path(__file__).resolve().parents[1] / "enzyme" / "fixtures" / "calls_g.O2.ll"
    text = path.read_text()
    assert "declare !dbg " in text
    assert_roundtrips(text, path.name)
    assert "declare !dbg " in str(_parse(text))
