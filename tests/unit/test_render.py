"""Template rendering: sandboxed, strict, and shell-safe."""

from __future__ import annotations

import pytest

from rocbuild.errors import RecipeError
from rocbuild.plan.render import Renderer
from rocbuild.recipe.model import Position
from rocbuild.recipe.templating import CONTEXT_NAMES

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


def test_shell_values_become_variables(renderer):
    script, env = renderer.shell("echo ${{ options.mode }} x${{ archs }}y $(echo ${{ arch }}) # '\"", POS, "k")
    assert script == """echo "${ROCBUILD_VALUE_1}" x"${ROCBUILD_VALUE_2}"y $(echo "${ROCBUILD_VALUE_3}") # '\""""
    assert env == {"ROCBUILD_VALUE_1": "a; rm -rf ~", "ROCBUILD_VALUE_2": "gfx90a,gfx1100",
                   "ROCBUILD_VALUE_3": "gfx90a"}
    script, _ = renderer.shell("cat <<'EOF'\nplain\nEOF\necho ${{ arch }}", POS, "k")
    assert script.endswith('EOF\necho "${ROCBUILD_VALUE_1}"')
    # a command substitution is a command again, inside double quotes too
    script, _ = renderer.shell('echo "$(printf %s ${{ arch }})" `echo ${{ arch }}` $((1 + 2)) ${{ arch }}', POS, "k")
    assert script == ('echo "$(printf %s "${ROCBUILD_VALUE_1}")" `echo "${ROCBUILD_VALUE_2}"` $((1 + 2)) '
                      '"${ROCBUILD_VALUE_3}"')


@pytest.mark.parametrize("script, where", [
    ("bash -c 'echo ${{ options.mode }}'", "inside single quotes"),
    ("echo $'${{ options.mode }}'", "inside $'...' quotes"),
    ('echo "${{ options.mode }}"', "inside double quotes"),
    ('bash -c "echo ${{ options.mode }}"', "inside double quotes"),
    ("bash <<EOF\necho ${{ options.mode }}\nEOF", "inside a here-document"),
    ("python - <<-'END'\n\tprint(${{ options.mode }})\n\tEND", "inside a here-document"),
    ("eval ${{ options.mode }}", "after eval"),
    ("bash -c ${{ options.mode }}", "after eval, let, -c or <<<"),
    ("bash <<< ${{ options.mode }}", "after eval, let, -c or <<<"),
    ("let n=${{ options.mode }}", "after eval, let, -c or <<<"),
    ("echo $(( ${{ options.mode }} + 1 ))", "inside arithmetic $(( ))"),
    ("(( ${{ options.mode }} > 1 )) && echo big", "inside arithmetic (( ))"),
    ("if [[ ${{ options.mode }} -eq 1 ]]; then echo one; fi", "inside [[ ]]"),
    ("echo \"$(echo '${{ options.mode }}')\"", "inside single quotes"),
])
def test_a_shell_value_where_it_could_become_code_is_refused(renderer, script, where):
    with pytest.raises(RecipeError, match="could become code") as info:
        renderer.shell(script, POS, "k")
    assert where in info.value.render()


@pytest.mark.parametrize("template", [
    "${{ 'a' * 10**10 }}",
    "${{ ['a'] * 10**6 }}",
    "${{ 10 ** 10 ** 10 }}",
    "${{ ('a' * 90000) ~ ('a' * 90000) }}",
    "${{ ('a' * 90000) + ('a' * 90000) }}",
    "${{ ['a' * 50000, 'b' * 50000] | join('x') }}",
    "${{ ('a' * 2000) | replace('a', 'b' * 100) }}",
    "${{ ('a' * 2000).replace('a', 'b' * 100) }}",
    "${{ 'a'.ljust(10**9) }}",
    "${{ '%99999999s' % 'a' }}",
    "${{ 'a' | center(10**9) }}",
    "${{ range(10**5) | list }}",
    "${{ '{0}'.format(archs) }}",
    "${{ archs | map(attribute='__class__') | list }}",
    "${{ archs | attr('__class__') }}",
    "${% for a in archs %}${{ a }}${% endfor %}",
    "${% macro m() %}${{ m() }}${% endmacro %}${{ m() }}",
    "${{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
])
def test_templates_have_limits(renderer, template):
    with pytest.raises(RecipeError) as info:
        renderer.text(template, POS)
    assert info.value.exit_code == 2
    assert "<class" not in info.value.render()
