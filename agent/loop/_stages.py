"""The agent's stages. Each reads committed state and writes what it did; nothing else is
kept. A feature that is not configured mounts no stage and writes no key.

State keys: ``user_message``, ``history`` (the conversation sent to the model, grown by
appends), ``settings`` (model and the request options: temperature, max_tokens, tool_choice,
seed, top_p, stop, response_format, extra_body), ``iteration``, ``max_iterations``,
``system_prompt``, ``tools``, ``response`` (the last model answer), ``receipts`` (one per
call), ``usage_total``, ``wrap_up_asked``, ``stopped_early``, ``output_attempts``,
``output_error``, ``output_judged``, ``output_contract_unmet``, ``final_answer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from trackway.engine import Decision, Scope, StagePath, thaw
from trackway.engine.run._scope import TrackedScope
from trackway.tools import Identity

from ..context._across_runs import AcrossRuns
from ..context._compaction import seed_compaction, window_settings
from ..context._config import (
    CONFIGURABLE,
    CURRENT_SCOPE,
    AgentConfig,
    apply_configured,
)
from ..context._config import emit as _emit
from ..context._cost import account, halted
from ..context._findings import (
    file_declaration,
    served_ids,
    strip_answer,
)
from ..context._request import assemble, receipt_for
from ..context._window import window_stage
from ..grounding._contingent import contingent_at_answer
from ..grounding._gate import evidence_stages, gated
from ..grounding._validation import validate_answer
from ..memory._stages import memory_stages
from ..messages._tool_ids import call_repairs, unique_calls
from ..messages._usage import via
from ..middleware._input import admitting
from ..middleware._ledger import declared_links
from ..middleware._output import answering, passed_answer
from ..offer._offer import ToolSpecs, first_offer, offer_stage
from ..offer._tool_choice import tool_choice_outcome
from ..output._contract import contract_unmet
from ..output._judged import answer_error, settle_output
from ..providers.thinking import thinking_stages
from ..time._layer import person_zone, time_settings
from ._coverage import answer_limits, with_limits
from ._dispatch import Batch, dispatch, resumed
from ._model_call import (
    answer_record,
    cache_decision,
    output_error,
    stream_model,
    streams,
    with_thinking,
)

__all__ = [
    "CONFIGURABLE",
    "CURRENT_SCOPE",
    "WRAP_UP_PROMPT",
    "AgentConfig",
    "apply_configured",
    "stage_functions",
]

WRAP_UP_PROMPT = (
    "You have reached the limit of tool calls for this request. Do not call any tools. "
    "Give your best final answer now from what you already know, and say what you could "
    "not find out."
)


def stage_functions(cfg: AgentConfig) -> dict[str, Callable[..., Any]]:
    """The stage functions of one agent, closed over its configuration."""
    vias: dict[bool, tuple[object, dict[str, Any] | None]] = {}  # by streamed: see call_llm
    at_input, at_output = bool(cfg.links("input")), bool(cfg.links("output"))  # message doors
    shared = AcrossRuns()  # the settings, tools and request frame its runs share

    def seed(scope: Scope, admitted: str | None = None) -> None:
        message = scope["message"] if admitted is None else admitted  # as the input door left it
        prior = thaw(scope.get("prior_history", []))
        settings: dict[str, Any] = {"model": cfg.model, **cfg.options}
        if cfg.cache_policy is not None:  # each receipt holds the call's decision
            settings["cache_policy"] = "function"
        if cfg.arg_validation != "enforce":  # what the model reads of bad arguments changes
            settings["tool_arg_validation"] = cfg.arg_validation
        if cfg.max_tool_result_chars is not None:
            settings["max_tool_result_chars"] = cfg.max_tool_result_chars
        if not cfg.repeated_call_nudge:
            settings["repeated_call_nudge"] = False
        if cfg.wrap_up_off_recorded:
            settings["wrap_up_at_max_iterations"] = False
        if cfg.limits_travel:  # the answer handed back gains a block
            settings["limits_travel"] = True
        if cfg.findings:  # schemas gain the reserved argument; the ledger piece, its options
            settings["findings"] = cfg.findings_plan.record()
        if cfg.pricing is not None:  # the cost ledger is computed from the record
            settings["pricing"] = cfg.pricing
        if cfg.cost_budget is not None:
            settings["cost_budget"] = cfg.cost_budget
        if cfg.skills is not None:  # each call is served the offer stage's system pieces
            settings["system_pieces"] = True
        if cfg.tool_choice is not None:  # which classifier reads each call, and how
            settings["tool_choice_by"] = cfg.tool_choice.record()
        if cfg.middleware:  # which links stand at which doors: a replay mounts them
            settings["middleware"] = declared_links(cfg.middleware)
            if cfg.parallel_tool_calls == 1:  # the links decide call by call, as they ran
                settings["max_parallel_tool_calls"] = 1
        if cfg.evidence is not None:  # the gate's posture: a replay judges as the run did
            settings["evidence"] = cfg.evidence.record()
        if cfg.validation is not None:  # the answer's checks, as data: a replay runs them
            settings["answer_validation"] = cfg.validation.record()
        if cfg.thinking_handler is not None:  # which handler normalised the answers (by name)
            settings["thinking_handler"] = cfg.thinking_handler.name
        if cfg.memories:  # each call is served what memory-recall committed
            settings["memory"] = [memory.record() for memory in cfg.memories]
        if cfg.artifacts is not None:  # placement threshold: a replay serves tickets as recorded
            settings["artifacts"] = cfg.artifacts.record()
        if cfg.self_explain is not None:  # the guide and the trace tools: replay rebuilds them
            settings["self_explain"] = cfg.self_explain.record()
        time_settings(cfg.time, settings)  # .time(): the zone, policy, reader a replay needs
        if cfg.ontology is not None:  # the map, once per run: the run constant ``ontology``
            cfg.ontology.seed(scope, settings)
        if cfg.window is not None:  # what each call is served depends on it
            keep = cfg.keep_last_tool_results
            settings["window"] = window_settings(cfg.window, keep, cfg.keep_ledger_facts)
        identity = scope.get("identity")
        if identity is not None:  # who the run is for, as the caller said (never invented)
            scope["identity"] = identity
        if scope.get("session_id") is not None:
            scope["session_id"] = scope["session_id"]
        continuing = cfg.skills is not None and cfg.skills.continuing
        carried = scope.get("carried") if continuing else None
        if carried is not None:
            cursor = carried.get("skill_cursor")  # continuity="conversation": it goes on
            known = cursor is not None and cursor["skill"] in (None, *cfg.skills.skills)
            if known:  # a skill the agent no longer has starts over
                scope["skill_cursor"] = cursor
        if cfg.configure is not None:
            context = {
                "message": message,
                "identity": None if identity is None else Identity.model_validate(thaw(identity)),
                "run_id": scope.run_id,
                "defaults": {"model": cfg.model, "instructions": cfg.system, **cfg.options},
            }
            token = CURRENT_SCOPE.set(scope)
            try:
                chosen = dict(cfg.configure(context))
            finally:
                CURRENT_SCOPE.reset(token)
            apply_configured(cfg, chosen, settings)
            if "instructions" in chosen:
                scope["resolved_instructions"] = chosen["instructions"]
        settle_output(cfg, settings)  # the schema, its native format, the fallback chain
        shared.write(scope, "settings", settings)
        scope["user_message"] = message
        scope["iteration"] = 1
        scope["max_iterations"] = cfg.max_iterations
        if scope.get("retry"):  # resume_on_error: the failed call is asked again as it was
            scope.extend("history", prior)
        else:
            scope.extend("history", [*prior, {"role": "user", "content": message}])
        if prior and getattr(cfg.window, "name", None) == "compaction":
            seed_compaction(scope)  # a continued conversation's folded turns
        _emit(scope, "agent.turn_start", {"message": message, "agent": cfg.name})

    def system_prompt(scope: Scope) -> None:
        text = scope.get("resolved_instructions", cfg.system)
        if cfg.self_explain is not None:  # the trace tools' guide follows the author's text
            text = cfg.self_explain.served_after(text)
        if text is not None:
            scope["system_prompt"] = text

    specs = ToolSpecs(cfg)

    def tools(scope: Scope) -> None:
        if cfg.skills is not None:  # the declarations, as data: served and judged from it
            scope["skills"] = cfg.skills.data
        shared.write(scope, "tools", [specs(name) for name in first_offer(cfg)])
        if cfg.asks_people:  # which calls wait for a person: replay needs no code for it
            scope["people"] = {
                "asks": {n: dict(t.asks) for n, t in cfg.tools.items() if t.asks is not None},
                "check_ins": dict(cfg.check_ins),
                "gated": cfg.gate is not None
                or any(t.gate is not None for t in cfg.tools.values()),
            }
        rules = {
            n: {
                "ask_or_assume": thaw(t.ask_or_assume),
                "period": thaw(t.period),
                "input_schema": thaw(t.input_schema),  # the author's: it judges the arguments
            }
            for n, t in cfg.tools.items()
            if t.ask_or_assume or t.period
        }
        if rules:  # what fills or asks for arguments: replay needs no code for it
            scope["tool_rules"] = {n: {k: v for k, v in r.items() if v} for n, r in rules.items()}
        needs = {n: list(t.needs) for n, t in cfg.tools.items() if t.needs}
        if needs:  # which calls wait for a consent: replay needs no credentials for it
            scope["credential_needs"] = needs

    async def window(scope: Scope) -> None:
        keep = cfg.keep_last_tool_results
        await window_stage(scope, cfg.window, keep, id(cfg), cfg.keep_ledger_facts)

    async def call_llm(given: Scope) -> None:
        scope = cast(TrackedScope, given)  # the engine's scope: native calls
        # one cache per run and per mounted copy of the chart; it dies with the run
        mount = StagePath.parent_of(scope.stage_path)  # the key only: no parse
        cache = scope.run_local(("agent-messages", id(cfg), mount), shared.cache)
        decided = cache_decision(cfg, scope)  # a cache policy function's, call by call
        assembled = assemble(scope, cache, None if decided is None else decided[0])
        shared.keep(cache)
        k = len(scope.get("receipts", [])) + 1
        iteration = scope["iteration"]
        built = scope._emit_built  # the loop's own events: exact JSON, encoded once
        built("agent.iteration_start", {"iteration": iteration})
        built("stream.llm_start", {"k": k, "model": assembled.request.model})
        provider = cfg.provider
        streamed = streams(cfg)
        if streamed:
            response = await stream_model(cfg, scope, assembled.request)
        else:
            response = await provider.complete(assembled.request)
        # the answer is committed as the model gave it; the calls are acted on with one id
        # each (unique_calls, applied again by every stage that reads them)
        repairs = call_repairs(response.tool_calls) if len(response.tool_calls) > 1 else None
        usage = None if response.usage is None else response.usage.model_dump(exclude_none=True)
        receipt = receipt_for(k, assembled, usage, response.stop_reason)
        if decided is not None:  # what the function said; settings say only that it decides
            receipt["cache"] |= {"policy": "function", "system": decided[1]}
        known = vias.get(streamed)
        if known is not None and known[0] is provider:
            described = known[1]  # shared read-only by the receipts, as committed values are
        else:
            described = via(provider, streamed)
            if not callable(getattr(provider, "describe_call", None)):  # the same every call
                vias[streamed] = (provider, described)
        if described is not None:
            receipt["via"] = described
        if repairs:
            receipt["tool_call_repairs"] = repairs
            _emit(scope, "agent.tool_calls_repaired", {"k": k, "repairs": repairs})
        scope._extend_built("receipts", [receipt])
        if cfg.ontology is not None:  # the call was served the map's piece (ids and counts)
            built("ontology.served", cfg.ontology.served(k))
        if cfg.tool_choice is not None:  # what the model called against the pick
            tool_choice_outcome(cfg, scope, k, response.tool_calls)
        # a JSON-mode dump is plain JSON (NaN as null, tuples as lists): handed over as is
        scope._set_built("response", answer_record(response))
        # the sum of what providers reported; a call that reported nothing has usage None in
        # its receipt and is not counted as zero (RunUsage.unreported_calls)
        tick = account(scope, k, assembled.request.model, usage)
        built(
            "stream.llm_end",
            {
                "k": k,
                "tool_calls": len(response.tool_calls),
                "usage": usage,
                "stop_reason": response.stop_reason,
            },
        )
        built("cost.tick", tick)

    def route(given: Scope) -> Decision:
        scope = cast(TrackedScope, given)  # the engine's scope: native calls
        response = scope["response"]
        calls = response.get("tool_calls") or ()
        iteration = scope["iteration"]
        limit = scope["max_iterations"]
        evidence: dict[str, Any] = {
            "tool_calls": len(calls),
            "iteration": iteration,
            "max_iterations": limit,
        }
        if halted(scope) is not None:  # over the cost budget: no further call
            if cfg.output_model is not None:  # the final stage judges this answer, not an older
                content = response.get("content", "")
                judged = strip_answer(content)[0] if cfg.findings else content
                error = answer_error(cfg, scope, response, judged)
                if error is not None:
                    scope["output_error"] = error
                elif "output_error" in scope:
                    del scope["output_error"]
            return Decision("final", {**evidence, "chosen": "final", "why": "cost budget"})
        if calls and cfg.serves_tools:
            if iteration < limit:
                return Decision("tool-calls", {**evidence, "chosen": "tool-calls"})
            if cfg.wrap_up and not scope.get("wrap_up_asked"):
                return Decision(
                    "wrap-up",
                    {
                        **evidence,
                        "chosen": "wrap-up",
                        "why": "max_iterations reached with tool calls",
                    },
                )
            return Decision("final", {**evidence, "chosen": "final", "why": "cut short"})
        if cfg.output_model is not None:
            content = response.get("content", "")
            if cfg.findings:  # judged without the notes the answer will lose
                content = strip_answer(content)[0]
            error = answer_error(cfg, scope, response, content)
            if error is not None:
                scope["output_error"] = error
                attempts = scope.get("output_attempts", 0)
                if attempts < cfg.output_retries:
                    return Decision(
                        "output-retry", {**evidence, "chosen": "output-retry", "error": error}
                    )
            elif "output_error" in scope:
                del scope["output_error"]
        return Decision("final", {**evidence, "chosen": "final"})

    async def tool_calls(given: Scope) -> None:
        scope = cast(TrackedScope, given)  # the engine's scope: native calls
        response = scope["response"]
        calls = unique_calls(response["tool_calls"])[0]
        batch = Batch(scope["iteration"])
        turn = {"role": "assistant", "content": response.get("content", ""), "tool_calls": calls}
        batch.messages.append(with_thinking(turn, response))
        await dispatch(cfg, scope, calls, 0, batch)

    async def tool_calls_resumed(given: Scope, value: Any) -> None:
        """The person answered: the waiting call gets its result, then the rest run."""
        await resumed(cfg, cast(TrackedScope, given), value)

    def wrap_up(given: Scope) -> None:
        scope = cast(TrackedScope, given)  # the engine's scope: native calls
        response = scope["response"]
        iteration = scope["iteration"]
        scope.append("history", {"role": "user", "content": WRAP_UP_PROMPT, "origin": "library"})
        scope["wrap_up_asked"] = True
        pending = unique_calls(response.get("tool_calls"))[0]
        stopped = {
            "reason": "max-iterations",
            "iteration": iteration,
            "limit": scope["max_iterations"],
            "pending_tool_calls": pending,
            "pending_count": len(pending),
            "wrapped_up": True,
        }
        scope["stopped_early"] = stopped
        scope["iteration"] = iteration + 1
        _emit(scope, "agent.budget_exhausted", {**stopped, "action": "wrapped-up"})
        _emit(scope, "agent.iteration_end", {"iteration": iteration, "tool_calls": 0})

    def output_retry(scope: Scope) -> None:
        response = scope["response"]
        error = scope["output_error"]
        attempts = scope.get("output_attempts", 0) + 1
        scope.extend(
            "history",
            [
                {"role": "assistant", "content": response.get("content", "")},
                {
                    "role": "user",
                    "content": "Your answer did not match the required output "
                    f"schema: {error}. Answer again with JSON that matches it exactly.",
                    "origin": "library",
                },
            ],
        )
        scope["output_attempts"] = attempts
        scope["iteration"] = scope["iteration"] + 1
        _emit(scope, "agent.output_retry", {"attempt": attempts, "error": error})

    def final(given: Scope) -> None:
        scope = cast(TrackedScope, given)  # the engine's scope: native calls
        response = scope["response"]
        answer = response.get("content", "")
        calls = response.get("tool_calls") or []
        hit = halted(scope)
        if calls and cfg.serves_tools and not scope.get("wrap_up_asked"):
            pending = unique_calls(calls)[0]
            stopped = {
                "reason": "max-iterations",
                "iteration": scope["iteration"],
                "limit": scope["max_iterations"],
                "pending_tool_calls": pending,
                "pending_count": len(pending),
                "wrapped_up": False,
            }
            if hit is not None:  # the spend, not the iterations, ended the turn
                stopped.update(reason="cost-budget", limit=hit["limit"], spend=hit["spend"])
            scope["stopped_early"] = stopped
            _emit(scope, "agent.budget_exhausted", {**stopped, "action": "cut-short"})
        elif hit is not None and cfg.output_model is not None and scope.get("output_error"):
            stopped = {
                "reason": "cost-budget",
                "iteration": scope["iteration"],
                "limit": hit["limit"],
                "spend": hit["spend"],
                "pending_count": 0,
                "wrapped_up": False,
            }
            scope["stopped_early"] = stopped
            _emit(scope, "agent.budget_exhausted", {**stopped, "action": "cut-short"})
        if response.get("stop_reason") == "max_tokens":
            k = len(scope.get("receipts", []))
            earlier = scope.get("stopped_early")
            settings = scope["settings"]
            if earlier is None:
                cut = {
                    "reason": "max-tokens",
                    "iteration": scope["iteration"],
                    "k": k,
                    "limit": settings.get("max_tokens"),
                    "pending_count": 0,
                }
            else:  # a wrap-up answer that was cut as well: both are said
                cut = {**thaw(earlier), "answer_cut_at_max_tokens": True, "k": k}
            scope["stopped_early"] = cut
            _emit(
                scope,
                "agent.answer_truncated",
                {"k": k, "iteration": scope["iteration"], "max_tokens": settings.get("max_tokens")},
            )
        if cfg.findings:  # notes the model wrote into its answer are filed, not handed on
            answer, declared = strip_answer(answer)
            if declared is not None:
                offered = served_ids(scope)
                file_declaration(
                    scope, declared, by="answer", iteration=scope["iteration"], offered=offered
                )
            contingent_at_answer(cfg, scope, answer)  # values resting on set-aside results
        # the answer as the output links passed it, when one rewrote it (limits included)
        passed = passed_answer(scope, scope["iteration"]) if at_output else None
        if cfg.output_model is not None:  # also when the turn was cut short: maybe unjudged
            unmet = contract_unmet(cfg, scope, response, answer if passed is None else passed)
            if unmet is not None:
                scope["output_contract_unmet"] = unmet
        limits = answer_limits(scope) if cfg.limits_travel else None
        if limits is not None:  # composed from the record: the model cannot drop it
            scope["answer_coverage"] = limits
            if cfg.output_model is None:  # a typed answer stays JSON
                answer = with_limits(answer, limits, person_zone(cfg.time, scope))
        if passed is not None:  # what the person gets is what the links passed
            answer = passed
        scope["final_answer"] = answer
        if cfg.validation is not None:  # the answer's checks, within their limits
            validate_answer(cfg.validation, scope, answer)
        stopped_early = scope.get("stopped_early")
        if stopped_early is not None:  # whether the answer handed back has any text at all
            stopped_early = {**thaw(stopped_early), "empty_answer": not answer.strip()}
            scope["stopped_early"] = stopped_early
        usage = scope.get("usage_total")
        _emit(
            scope,
            "agent.turn_end",
            {
                "answer": answer,
                "iterations": scope["iteration"],
                "usage": thaw(usage) if usage else None,
                "stopped_early": None
                if stopped_early is None
                else {
                    key: stopped_early.get(key)
                    for key in ("reason", "limit", "pending_count", "empty_answer")
                },
                **({"answer_coverage": limits} if limits is not None else {}),
            },
        )

    def person_answer(scope: Scope, content: str) -> str:
        """The answer as ``final`` would hand it back (what the output links see)."""
        answer = strip_answer(content)[0] if cfg.findings else content
        if cfg.limits_travel and cfg.output_model is None:
            limits = answer_limits(scope)
            if limits is not None:
                answer = with_limits(answer, limits, person_zone(cfg.time, scope))
        return answer

    model = cfg.output_model
    judge = None if model is None else (lambda scope, text: output_error(scope, model, text))
    return {
        # behind the doors only when a link stands there: otherwise nothing changes
        "seed": admitting(cfg, seed) if at_input else seed,
        "system-prompt": system_prompt,
        "tools": tools,
        "call-llm": call_llm,
        "offer": offer_stage(cfg, specs),
        "window": window,
        "route": gated(cfg, answering(cfg, route, person_answer, judge) if at_output else route),
        "tool-calls": tool_calls,
        "tool-calls-resumed": tool_calls_resumed,
        "wrap-up": wrap_up,
        "output-retry": output_retry,
        "final": final,
        **memory_stages(cfg),
        **evidence_stages(cfg),
        **thinking_stages(cfg.thinking_handler),
    }
