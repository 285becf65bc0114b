"""Build hook: map cli.py, hardware/ and models/ into the llm_cost package of a regular wheel.

An editable install must not copy them: a copy in site-packages/llm_cost/ would shadow the
checkout and go stale. There the wheel maps only `llm_cost` to the checkout (dev-mode-exact),
and llm_cost/__init__.py appends the checkout root to the package path, so edits to cli.py and
the catalogs are live and no other top-level name is importable.
"""

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MAPPED_INTO_PACKAGE = {"cli.py": "llm_cost/cli.py", "hardware": "llm_cost/hardware", "models": "llm_cost/models"}


class CatalogsIntoPackage(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name == "wheel" and version == "standard":
            build_data["force_include"].update(MAPPED_INTO_PACKAGE)
