"""Three plugins written as a plugin author would, from docs/plugins.md: installed through entry points by
the tests' setup (:mod:`plugin_authors.conftest`), tested alone, with Enzyme and with each other."""
