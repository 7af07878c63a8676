"""Template rendering: sandboxed, strict, and shell-safe."""

from __future__ import annotations

import pytest

from rocbuild.errors import RecipeError
from rocbuild.recipe.model import Position
from rocbuild.render import Renderer
from rocbuild.templating import CONTEXT_NAMES

POS = Position("r.yaml", 7, 3, "steps[0].run[1]")


@pytest.fixture
def renderer():
    ctx = {name: "" for name in CONTEXT_NAMES}
    ctx.update(archs=["gfx90a", "gfx1100"], arch="gfx90a", options={"mode": "a; rm -rf ~"}, jobs=4)
    return Renderer(ctx)


def test_renders_values(renderer):
    assert renderer.text("-DX=${{ archs | join(';') }}", POS) == "-DX=gfx90a;gfx1100"
    assert renderer.text("plain", POS) == "plain"


@pytest.mark.parametrize("escape", [
    "${{ ''.__class__ }}",
    "${{ ''.__class__.__mro__[1].__subclasses__() }}",
    "${{ archs.__class__.__base__ }}",
    "${{ options.__class__ }}",
    "${{ lipsum.__globals__ }}",
    "${{ cycler.__init__.__globals__.os }}",
    "${{ archs.append('x') }}",
])
def test_sandbox_refuses_escapes(renderer, escape):
    with pytest.raises(RecipeError) as info:
        renderer.text(escape, POS)
    text = info.value.render()
    assert text.startswith("r.yaml:7:3: error: steps[0].run[1]:")
    assert "sandbox" in text or "undefined" in text
    assert "<class" not in text and "<module" not in text  # no object ever rendered


def test_undefined_attribute_is_an_error(renderer):
    with pytest.raises(RecipeError, match="undefined"):
        renderer.text("${{ options.nope }}", POS)


def test_when_must_be_boolean(renderer):
    assert renderer.condition("${{ 'gfx90a' in archs }}", POS, "k") is True
    assert renderer.condition("${{ jobs > 8 }}", POS, "k") is False
    with pytest.raises(RecipeError, match="must render to true or false"):
        renderer.condition("${{ archs }}", POS, "k")


def test_shell_values_are_quoted(renderer):
    out = renderer.text("echo ${{ options.mode }} && echo ${{ archs }}", POS, shell=True)
    assert out == "echo 'a; rm -rf ~' && echo gfx90a,gfx1100"
