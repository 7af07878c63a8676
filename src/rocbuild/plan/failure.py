"""What a failure report says beside the log, taken from the plan: the tree its build-file detectors read,
and the jobs and memory per job the build ran with (what a compiler killed by signal 9 is judged by)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocbuild.detect.jobs import DEFAULT_MEMORY_PER_JOB, show_size
from rocbuild.plan.model import Plan

if TYPE_CHECKING:
    from rocbuild.draft.report import Context


def report_context(plan: Plan) -> Context:
    """Made when something failed: the report and its trap catalogue are loaded then, not by every build."""
    from rocbuild.draft.report import Context

    per_job = plan.recipe.requires.memory_per_job or DEFAULT_MEMORY_PER_JOB
    return Context(tree=plan.work.src, jobs=plan.host.jobs, jobs_why=plan.host.jobs_why,
                   memory_per_job=show_size(per_job).replace(" ", ""))
