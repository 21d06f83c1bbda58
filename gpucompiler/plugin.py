"""Plugin interface (placeholder until the pipeline lands)."""


def plugin_versions(names):
    return [[n, None] for n in names]
