"""Jobs, configs and targets: frozen, hashable, stable keys across processes."""

import subprocess
import sys

import attrs
import pytest

from gpucompiler import CompilerConfig, CompilerJob, LLVMSource, NativeTarget, parse_target
from gpucompiler.errors import ConfigError, UnknownTargetError
from gpucompiler.identity import job_key
from gpucompiler.targets import PTXTarget

IR = "define i32 @f(i32 %x) {\n  ret i32 %x\n}\n"


def make_job(**config):
    return CompilerJob(LLVMSource(IR, "f"), CompilerConfig(target=NativeTarget(), **config))


def test_frozen():
    job = make_job()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        job.config = None
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        PTXTarget().capability = (8, 0)


def test_key_depends_on_everything_that_changes_output():
    base = job_key(make_job())
    assert job_key(make_job()) == base
    assert job_key(make_job(opt_level=3)) != base
    assert job_key(make_job(kernel=True)) != base
    assert job_key(make_job(params={"a": 1})) != base
    assert job_key(CompilerJob(LLVMSource(IR.replace("%x", "%y"), "f"), CompilerConfig(target=NativeTarget()))) != base
    assert job_key(CompilerJob(LLVMSource(IR, "f"), CompilerConfig(target=PTXTarget()))) != base
    assert (job_key(CompilerJob(LLVMSource(IR, "f"), CompilerConfig(target=PTXTarget(capability=(8, 0)))))
            != job_key(CompilerJob(LLVMSource(IR, "f"), CompilerConfig(target=PTXTarget()))))


def test_params_and_plugins_are_order_insensitive():
    assert job_key(make_job(params={"a": 1, "b": 2})) == job_key(make_job(params={"b": 2, "a": 1}))


def test_key_is_stable_across_processes():
    code = (
        "from gpucompiler import *\nfrom gpucompiler.identity import job_key\nfrom gpucompiler.targets import PTXTarget\n"
        f"print(job_key(CompilerJob(LLVMSource({IR!r}, 'f'), CompilerConfig(target=PTXTarget(), params={{'z': 1.5}}))))"
    )
    keys = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": str(seed), "PATH": ""}).stdout.strip()
            for seed in (1, 2)}
    assert len(keys) == 1 and len(keys.pop()) == 64


@pytest.mark.parametrize("spec,expected", [
    ("native", NativeTarget()),
    ("ptx", PTXTarget()),
    ("ptx:sm_80", PTXTarget(capability=(8, 0))),
    ("ptx:sm_90", PTXTarget(capability=(9, 0))),
    ("ptx:sm_100", PTXTarget(capability=(10, 0))),
])
def test_parse_target(spec, expected):
    assert parse_target(spec) == expected


@pytest.mark.parametrize("spec", ["cuda", "ptx:90", "native:x", "ptx:sm_"])
def test_unknown_target_lists_known(spec):
    with pytest.raises(UnknownTargetError) as info:
        parse_target(spec)
    assert "native" in str(info.value) and "ptx" in str(info.value)


def test_bad_opt_level():
    with pytest.raises(ConfigError):
        make_job(opt_level=7)


def test_frontend_options_are_typed_and_part_of_the_key():
    from gpucompiler import FrontendOptions
    from gpucompiler.errors import ErrorModel
    src = LLVMSource("define void @f() {\n  ret void\n}\n", "f")
    keys = {job_key(CompilerJob(src, CompilerConfig(NativeTarget(), frontend=options)))
            for options in (FrontendOptions(), FrontendOptions(python_abi=True), FrontendOptions(boundscheck=True),
                            FrontendOptions(error_model=ErrorModel.NUMPY))}
    assert len(keys) == 4
    with pytest.raises(TypeError):
        FrontendOptions(error_model="numpy")  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("name", ["python_abi", "boundscheck", "error_model"])
def test_frontend_option_passed_as_param_is_refused_with_the_fix(name):
    with pytest.raises(ConfigError, match=f"FrontendOptions\\({name}="):
        CompilerConfig(NativeTarget(), params={name: True})


def test_frontend_options_round_trip_through_the_service_protocol():
    from gpucompiler import FrontendOptions
    from gpucompiler.errors import ErrorModel
    from gpucompiler.service.protocol import RequestError, config_from_json, config_to_json
    config = CompilerConfig(PTXTarget(), params={"enzyme_atomic": True},
                            frontend=FrontendOptions(boundscheck=True, error_model=ErrorModel.NUMPY))
    assert config_from_json(config_to_json(config)) == config
    for bad in ({"python_abi": 1, "boundscheck": False, "error_model": "python"},
                {"python_abi": False, "boundscheck": False, "error_model": "fast"},
                {"python_abi": False}, [], None):
        data = {**config_to_json(config), "frontend": bad}
        with pytest.raises(RequestError, match="malformed config"):
            config_from_json(data)
