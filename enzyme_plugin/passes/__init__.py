"""LLVM passes of the Enzyme plugin, each a small function on the module model, run by
:class:`enzyme_plugin.plugin.EnzymePlugin` at its stage:

* :mod:`.lower`: ``gpuc.enzyme.autodiff`` markers -> Enzyme's C interface (``link_deferred``);
* :mod:`.noinline`: functions with custom rules kept out of line (``link_deferred``) and restored (``post_ad``);
* :mod:`.nvvm`: NVVM intrinsics and libdevice calls preserved for AD (``pre_ad``) and restored (``post_ad``);
* :mod:`.inttoptr`: calls through constant addresses named (``post_irgen``) and restored (``post_ad``).
"""
