"""The contract at the bottom of the compiler: the target interface, configurations, jobs, sources.

Every hook's signature refers only to types defined here or below (errors,
the module in its three forms), as GPUCompiler.jl's ``interface.jl`` puts the
abstract target, config and job types first. Nothing here imports a room
above it, annotations included (``tests/test_layers.py``).

* :class:`Target` (:mod:`.target`): every target hook with its default;
* :class:`CompilerConfig`, :class:`FrontendOptions`, :class:`JitOptions`, :class:`PluginOptions` (:mod:`.config`);
* :class:`CompilerJob`, :class:`LLVMSource` and the :class:`Source` protocols (:mod:`.job`);
* :class:`Rules` (:mod:`.rules`): what the interpreter reads from a target's or plugin's rule set;
* :class:`~.facts.ModuleFacts` (:mod:`.facts`): the module facts targets' ``validate`` judges
  (imported from its module: it needs LLVM).
"""

from .config import GRID_EMULATION, CompilerConfig, FrontendOptions, JitOptions, PluginOptions, plugin_options
from .job import CompilerJob, JobSource, LLVMSource, RecordedSource, Source
from .rules import Rules
from .target import Target, WarpIntrinsics

__all__ = ["GRID_EMULATION", "CompilerConfig", "CompilerJob", "FrontendOptions", "JitOptions", "JobSource",
           "LLVMSource", "PluginOptions", "RecordedSource", "Rules", "Source", "Target", "WarpIntrinsics",
           "plugin_options"]
