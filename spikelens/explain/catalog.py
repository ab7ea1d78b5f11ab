"""The human text behind every finding kind and every cause: what it is, why it
matters, what to try.

A finding's one-line message is formatted from its numbers; the longer explanation
lives here, once, so `spikelens explain NAME` and the "next steps" of every report
say the same thing (ruff keeps `message()` apart from the rule's "Why is this bad?").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import UsageError


@dataclass(frozen=True)
class Entry:
    """One catalog page."""

    name: str
    group: str
    """`kind` (a finding kind) or `cause` (an explanation attached to a finding)."""
    title: str
    what: str
    why: str
    tries: tuple[str, ...]
    """What engineers do about it, most useful first (the report shows the first few)."""
    related: tuple[str, ...] = ()
    aliases: tuple[str, ...] = field(default=(), compare=False)


def _kind(name, title, what, why, tries, related=(), aliases=()) -> Entry:
    return Entry(name, "kind", title, what, why, tuple(tries), tuple(related), tuple(aliases))


def _cause(name, title, what, why, tries, related=(), aliases=()) -> Entry:
    return Entry(name, "cause", title, what, why, tuple(tries), tuple(related), tuple(aliases))


KINDS: tuple[Entry, ...] = (
    _kind(
        "spike", "Loss spike",
        "An abrupt upward excursion of a loss far outside its local noise: it rises within a few "
        "logged points, peaks, and either comes back (`fast` within 250 steps by default, `slow` "
        "later) or never does (`none`).",
        "Every spike costs the steps it takes to recover; one that never comes back wastes the rest "
        "of the run, and spikes that repeat announce a setup at the edge of stability (they tend "
        "to grow with model size and learning rate).",
        ("Resume from a checkpoint before {start_step|the spike} and skip the batches around it (the PaLM "
         "recipe: restart ~100 steps earlier and skip 200-500 batches).",
         "Clip the gradient norm (e.g. 1.0) if it is not clipped, or clip lower.",
         "Lower the peak learning rate or lengthen the warm-up.",
         "For repeated spikes: lower Adam's beta2 (0.95) or raise epsilon, add QK-layernorm or "
         "z-loss in transformers."),
        ("grad_explosion", "lr_jump", "warmup_end", "fp16_overflow", "bad_batch", "data", "resume"),
    ),
    _kind(
        "divergence", "Divergence",
        "The loss turns and keeps rising over many steps without one abrupt jump: training is "
        "running away rather than hiccupping. In a short run (under 40 points: epochs, a "
        "fine-tune's evaluations) it is a loss that stays 1.3x or more above its minimum for "
        "consecutive points, such as a warm-up to an LR far too high; the training and eval loss "
        "rising together are one finding.",
        "A diverging run does not come back on its own; every step after the turn is wasted "
        "compute, and it often ends in NaN.",
        ("Stop the run and resume from the last checkpoint before {start_step|the turn}.",
         "Lower the learning rate (often 2-3x) for the resumed stretch, or for the whole schedule.",
         "Add or tighten gradient clipping.",
         "Check the schedule around the turn: a warm-up ending, a restart or a misconfigured "
         "scheduler often coincides with it.",
         "In mixed precision, switch fp16 to bf16 if the loss scale was falling."),
        ("nan", "spike", "lr_jump", "warmup_end", "grad_explosion"),
    ),
    _kind(
        "excursion", "Slow excursion",
        "The loss climbed well above its trend over many steps, with no single jump, then came "
        "back: each step looks like noise, the stretch does not.",
        "Training went backwards for a while. It recovered this time; an optimizer this close to "
        "the edge of stability, or data this uneven, can produce one that does not.",
        ("Lower the learning rate for this stage of training (or decay it earlier).",
         "Check the gradient norm over the stretch: a slow climb there points at the optimizer; "
         "add or tighten clipping.",
         "Check the data over the stretch (a harder or broken slice, a mixture change).",
         "If it follows a resume, check that optimizer and scheduler state were restored."),
        ("spike", "divergence", "oscillation", "lr_jump", "grad_explosion", "data"),
    ),
    _kind(
        "nan", "NaN or inf",
        "A metric became NaN or ±inf. The finding starts at the first non-finite value; a blow-up "
        "in the steps just before it belongs to the same event.",
        "Once the weights hold a NaN every later step is garbage; the run is over unless it is "
        "resumed from a checkpoint written before the first non-finite value.",
        ("Resume from the last checkpoint before {start_step|the first non-finite value}; checkpoints "
         "written after it may already hold NaN weights.",
         "Look at the steps just before: a rising gradient norm or loss means an overflow (lower "
         "LR, clip gradients); a sudden NaN from a finite loss points at one batch or an op "
         "(log of 0, division by 0, sqrt of a negative).",
         "Replay the step with anomaly detection (`spikelens replay`, or "
         "torch.autograd.set_detect_anomaly) to find the op that produced it.",
         "In fp16, use bf16 or a dynamic loss scaler; check custom losses for eps terms."),
        ("divergence", "fp16_overflow", "grad_explosion", "bad_batch"),
    ),
    _kind(
        "oscillation", "Oscillation",
        "A sustained stretch of abnormally large swings of the loss (well above its usual noise), "
        "not a single spike.",
        "The optimizer is bouncing around instead of descending: usually a learning rate too high "
        "for the current curvature or batch size, sometimes a data-loader that alternates between "
        "very different sources.",
        ("Lower the learning rate for that stretch, or the peak of the schedule.",
         "Raise the batch size (or gradient accumulation) to lower gradient noise.",
         "Lower Adam's beta2 (e.g. 0.999 → 0.95) so the second moment adapts faster.",
         "Check data ordering: shuffle across sources so consecutive batches are alike."),
        ("spike", "divergence", "lr_jump"),
    ),
    _kind(
        "level_shift", "Level shift",
        "The loss moved to a different level and stayed there: a step change rather than a spike "
        "that comes back.",
        "An upward shift is lost progress (often the aftermath of a spike that never recovered, or "
        "of a resume with the wrong state); a shift in either direction can also mean the data "
        "mixture or the loss definition changed mid-run.",
        ("Check what changed at that step: a resume, a new data shard or mixture, a config change.",
         "If the loss shifted up after a spike, resume before it and skip the batches around it.",
         "If the data changed on purpose, compare runs from that step onwards only."),
        ("spike", "resume", "data"),
    ),
    _kind(
        "noise", "Noise summary",
        "How noisy the loss is from point to point (robust spread of the log-loss), and how many "
        "isolated outliers it has. Informational.",
        "A noise level sets what counts as a spike; an unusually noisy loss means small batches, "
        "an uneven data mixture or a learning rate near the edge.",
        ("Compare the noise with sibling runs: a higher level at the same batch size points at the "
         "data or the learning rate.",
         "Raise the batch size or smooth the logged loss (log a mean over the logging interval).",),
        ("outliers", "oscillation"),
        aliases=("noise_summary",),
    ),
    _kind(
        "outliers", "One-point outliers",
        "Many single logged points far above the curve that are back at the very next point: "
        "heavy-tailed per-batch noise, summarised in one finding instead of one spike each.",
        "Usually harmless; the largest ones are kept as spikes. Many of them at a fixed position in "
        "the data order point at a few bad batches.",
        ("If they recur at the same data positions across runs, find and drop those samples.",
         "Log the loss averaged over the logging interval to see the trend behind the noise."),
        ("spike", "bad_batch", "noise"),
    ),
    _kind(
        "grad_norm_outlier", "Gradient norm outlier",
        "The gradient norm jumped far above its usual level while the loss stayed calm.",
        "Large gradients are the usual precursor of spikes and divergence; they also show that "
        "clipping (if any) is doing a lot of work.",
        ("Check whether gradient clipping is on and at what threshold.",
         "Look at the batches at that step: very long sequences or rare tokens make big gradients.",
         "If it repeats, lower the learning rate or Adam's beta2."),
        ("grad_explosion", "spike"),
    ),
    _kind(
        "loss_scale_collapse", "Loss scale collapse",
        "The mixed-precision loss scale was halved many times in a row (fp16 gradients "
        "overflowing; every halving is a skipped step).",
        "While the scale collapses the optimizer skips updates; if it reaches the floor, the "
        "gradients underflow and training silently stops learning or produces NaN.",
        ("Use bf16 instead of fp16 where the hardware supports it (no loss scaling needed).",
         "Lower the learning rate or clip gradients so gradients stay in fp16 range.",
         "Raise the scaler's minimum or its growth interval; keep the loss and softmax in fp32."),
        ("fp16_overflow", "nan"),
    ),
    _kind(
        "lr_discontinuity", "Learning-rate discontinuity",
        "The learning rate jumped (or dropped) between two logged steps outside the shape of a "
        "warm-up or decay schedule.",
        "A jump of the learning rate is a change of the optimisation problem mid-run: the usual "
        "sign of a scheduler that restarted on resume, or a schedule misconfigured by steps vs "
        "epochs.",
        ("On resume, restore the scheduler state (scheduler.load_state_dict) along with the "
         "optimizer.",
         "Check the schedule's total steps and warm-up against the real number of steps "
         "(gradient accumulation and world size change it)."),
        ("lr_jump", "resume"),
    ),
    _kind(
        "plateau", "Plateau",
        "The model was not learning over a stretch of the run: the loss sat at a chance level "
        "(ln k for k classes, ln of the vocabulary for a language model: uniform predictions), or "
        "it was stuck and only broke out late, or it never left its first level. A loss that "
        "flattens after its early fall at another level is converging, not on a plateau; so are "
        "the slow tail of a long run and a continuation that starts late.",
        "At chance the model predicts nothing from its inputs: usually a setup bug (frozen or "
        "disconnected parameters, labels that do not match inputs, an LR of zero) or a blow-up "
        "that left uniform logits. A late breakthrough means the stuck steps were spent for "
        "nothing and the next run can skip them.",
        ("At chance: check that the optimizer holds the model's parameters and they require "
         "gradients, that the LR is not zero, and that labels line up with inputs (train on one "
         "batch: the loss must fall).",
         "After a blow-up to chance (an LR far too high): restart from the last checkpoint before "
         "it with a lower LR or a warm-up.",
         "Stuck, then a breakthrough: a larger LR, a better initialisation or a warm-up usually "
         "shortens the stuck stretch."),
        ("level_shift", "divergence"),
    ),
    _kind(
        "overfitting", "Overfitting",
        "The eval loss reached its minimum and turned up for several evaluations while the "
        "training loss kept falling (a fine-tune with five evaluations is judged too: the rise "
        "must then show at most evaluations after the minimum). Several eval sets that turn up "
        "together are one finding on the main one.",
        "From the eval minimum on, training memorises the training set: the best checkpoint is the "
        "one at the minimum, and every step after it is compute that makes the model worse.",
        ("Keep the checkpoint at the eval minimum (early stopping on the eval loss).",
         "Train on more or more varied data, or fewer epochs over the same data.",
         "Add regularisation: weight decay, dropout, data augmentation.",
         "Check for repeated data (a data loader that restarts each epoch on a small shard)."),
        ("plateau", "repeated_data", "level_shift"),
        aliases=("eval_divergence", "val_divergence"),
    ),
    _kind(
        "sudden_drop", "Sudden drop",
        "The loss fell abruptly far below its trend.",
        "Good news is suspicious in a loss curve: a drop is often a data change (easier data, "
        "repeated data after a resume, a leak) or a change of the loss definition, not learning.",
        ("Check whether the data loader restarted or the mixture changed at that step.",
         "Compare the eval loss: if it did not drop, the model is memorising repeated data."),
        ("repeated_data", "resume", "data"),
    ),
    _kind(
        "resume_overlap", "Resume overlap",
        "A resumed launch re-logged steps an earlier launch had already logged: it restarted from "
        "an older checkpoint (rollback). The older points are kept but marked superseded. A relaunch "
        "of an attempt killed early, and the steps runs appended to one log logged again, are notes.",
        "The overlapping steps were trained twice; comparing the two versions of the same steps "
        "shows whether the resume reproduced the run (same loss) or changed it.",
        ("Nothing to fix if the loss matches on the overlap; otherwise check that the data-loader "
         "position and RNG state were restored.",
         "Make sure dashboards use the latest launch for the overlapping steps (spikelens does)."),
        ("resume", "step_reset", "repeated_data"),
    ),
    _kind(
        "step_reset", "Step counter reset",
        "A resumed launch started its step counter again from 0 (the global step was not restored), "
        "so its steps are shifted onto the true timeline. Runs appended to one log (a sweep run one "
        "config after another, a script run twice) restart their counter too, from the first step with "
        "the loss at its first level: one note lists them, and the report judges the last run.",
        "Everything keyed by the step (the LR schedule, warm-up, checkpoint names, logging) may "
        "have restarted too: a warm-up run again mid-training, or a schedule that ends too late.",
        ("Restore the global step with the checkpoint (trainer state, not only model weights).",
         "Check the learning rate after the resume: a new warm-up here means the scheduler state "
         "was lost too."),
        ("resume", "lr_jump", "resume_overlap"),
    ),
    _kind(
        "repeated_data", "Repeated data after resume",
        "After a resume the loss is falsely low because the data loader restarted from the "
        "beginning and the model re-sees data it already trained on; the loss jumps back up when "
        "fresh data arrives (where the finding ends).",
        "The low loss is memorisation, not progress; the stretch trains on duplicates and the jump "
        "at fresh data looks like a spike though nothing broke.",
        ("Restore the data-loader / sampler position on resume (save the sampler state or the "
         "number of consumed samples in the checkpoint and skip that many).",
         "Use a stateful data loader (torchdata StatefulDataLoader, Megatron's consumed_samples)."),
        ("resume", "resume_overlap", "sudden_drop"),
    ),
    _kind(
        "step_gap", "Step gap",
        "Steps are missing between two launches or inside one: the logged steps jump forward "
        "further than the logging interval.",
        "Missing steps mean lost logs or a resume from a later checkpoint than the last logs; "
        "either way the curve has a hole that hides what happened.",
        ("Check whether logs of a launch are missing (another file or folder).",
         "If a launch crashed without flushing its logs, flush more often."),
        ("resume", "wallclock_gap"),
    ),
    _kind(
        "wallclock_gap", "Wall-clock gap",
        "A long pause in wall time between two logged points (a crash and restart, preemption, a "
        "stall on I/O or evaluation).",
        "Pauses are paid compute or queue time; a restart after one is where resume bugs show up.",
        ("Look for a resume at that point and check the loss right after it.",
         "If the pause is an evaluation or checkpoint, make it asynchronous or less frequent."),
        ("resume", "step_gap"),
    ),
    _kind(
        "empty_launch", "Launch that logged nothing",
        "A launch of the run started (it left a header-only event file, or a W&B run folder "
        "without history rows) and stopped before its first logged value. One finding counts "
        "them; where the run also restarted from the beginning, the restart finding counts them.",
        "One empty restart file beside a finished run costs nothing; many of them say the job "
        "kept crashing at start-up (a bad node, out of memory while loading, a wrong path), and "
        "each cost a queue wait and a start-up.",
        ("Read the job's stdout/stderr of those launches: they crashed before training began.",
         "If the launcher retries automatically, cap the retries and alert on the first failure."),
        ("resume_overlap", "wallclock_gap"),
    ),
    _kind(
        "ended_early", "Run ended early",
        "The run stopped well short of the plan its log states (`step 750/19560`, a trainer's "
        "`max_steps`, `max_epochs` in `hparams.yaml`), or its log ends in an error (a Python "
        "traceback, a kill message). Run level: the last logged step, the plan and the error line "
        "are in the evidence.",
        "A crashed run is the first thing its owner needs to know: its curves end where the error "
        "struck, and every judgement of the end of training (final loss, overfitting, plateau) is "
        "about a run that did not finish.",
        ("Read the error line and the lines before it in the log (out of memory, a NaN check, a "
         "data error, a lost node).",
         "Resume from the last checkpoint once the cause is fixed; check that the resume restores "
         "the step, the scheduler and the data position.",
         "A run stopped on purpose needs nothing; a run still being written will be judged again "
         "when it ends."),
        ("resume_overlap", "wallclock_gap", "nan"),
    ),
    _kind(
        "settings", "A logged setting that is wrong",
        "A value the log shows that no schedule makes right: a learning rate above 1.5 (an Adam-style "
        "optimizer's is 1e-6 to 1e-2), a loss scale of exactly 1 on every row (no dynamic loss "
        "scaling), an LR at its peak from the first step of a run whose LR decays later (no warm-up). "
        "The finding gives the value and the rows that show it.",
        "An LR of 5 destroys an Adam model in a few steps and every later step is wasted, whatever "
        "else the report says; fp16 without loss scaling loses small gradients; no warm-up is the "
        "usual cause of an early spike in a transformer.",
        ("Check the config value against what was meant (5 for 5e-5 is a common typo; a schedule "
         "multiplier is sometimes logged under the LR's name).",
         "In fp16, turn dynamic loss scaling on (or train in bf16).",
         "Add a warm-up of a few hundred to a few thousand steps."),
        ("divergence", "spike", "warmup_end"),
    ),
    _kind(
        "throughput_drop", "Throughput drop",
        "The run's throughput (tokens/s, samples/s, MFU) fell by a quarter or more and stayed down, judged "
        "on medians of a tenth of the run either side; a single slow step (a checkpoint save, an eval) is "
        "never one. A rank slower than the others is named.",
        "Every step left costs more GPU hours, and a slowdown often comes before a loss event: a data "
        "loader that fell behind, a throttled or failing node.",
        ("Look at the node's GPU clocks, temperature and ECC errors at that step (nvidia-smi, DCGM).",
         "Check the data loader: remote storage latency, a larger shard, too few workers.",
         "If one rank is slower, drain or replace that node and resume from the last checkpoint."),
        ("step_time_rise", "stall", "rank_outlier"),
    ),
    _kind(
        "step_time_rise", "Step time rise",
        "The time a step takes rose by a third or more and stayed up, judged as the throughput drop is; "
        "not told when a logged throughput held (the step does more: a batch-size ramp).",
        "The same as a throughput drop: every later step costs more, and it often announces a failing "
        "node or a starved data loader.",
        ("Look at the node's GPU clocks, temperature and ECC errors at that step.",
         "Check the data loader and the storage it reads.",
         "Compare the ranks' step times: one slow rank holds back every collective."),
        ("throughput_drop", "stall"),
    ),
    _kind(
        "stall", "Stall",
        "No step for far longer than a step takes (20 times the usual and at least two minutes, longer "
        "than any pause the run makes routinely), from the writer's wall time or the log's time stamps.",
        "A stalled run holds its GPUs and makes no progress; a hang in a collective or on storage often "
        "ends in a timeout crash.",
        ("Set NCCL_ASYNC_ERROR_HANDLING / TORCH_NCCL_ASYNC_ERROR_HANDLING and a collective timeout so a "
         "hang fails fast.",
         "Check the storage the run writes checkpoints to and reads data from.",
         "Look for a rank that died or was preempted at that time."),
        ("ended_early", "wallclock_gap"),
    ),
    _kind(
        "memory_growth", "Memory growth",
        "Memory rose steadily over most of the run (a leak), or stood at 97% of the device or more for a "
        "stretch of the run, where the log gives the capacity (a share, a total or the free memory).",
        "A leak ends in an out-of-memory crash hours into the run; a run at capacity crashes at the first "
        "longer batch.",
        ("Log with loss.item() / .detach(): a kept tensor keeps its whole graph alive.",
         "Look for lists of outputs kept for logging, and torch.compile recompiling for new shapes.",
         "Lower the micro-batch or sequence length, or turn on activation checkpointing."),
        ("ended_early", "out_of_memory"),
    ),
    _kind(
        "rank_outlier", "Rank unlike the others",
        "One rank of a run whose ranks log apart (a folder or file per rank) is consistently slower than "
        "the others; a loss event on some ranks only is named on that event.",
        "The ranks hold the same weights: one that behaves differently has its own data shard or its own "
        "hardware, and one slow rank holds back every collective.",
        ("Drain that rank's node and rerun its GPU diagnostics (DCGM).",
         "Read that rank's shard of the data at the step named."),
        ("throughput_drop", "spike"),
    ),
)

CAUSES: tuple[Entry, ...] = (
    _cause(
        "grad_explosion", "Gradient explosion",
        "The gradient norm climbed over several logged steps before the loss moved.",
        "The loss spike is the visible end of an optimisation instability that started earlier; "
        "it will come back unless the update size is limited.",
        ("Clip the gradient norm (1.0 is common), or clip lower than now.",
         "Lower the learning rate, or lengthen the warm-up.",
         "Lower Adam's beta2 (0.95) or raise epsilon so the update does not blow up when the "
         "second moment is stale.",
         "Resume from before the climb and skip the batches around the spike."),
        ("spike", "divergence", "grad_norm_outlier"),
    ),
    _cause(
        "lr_jump", "Learning-rate jump",
        "The learning rate jumped just before the spike: a scheduler bug, or a restart with the "
        "wrong schedule.",
        "The optimizer suddenly takes much larger steps than the ones the curve was stable with.",
        ("Restore the scheduler state on resume (scheduler.load_state_dict).",
         "Check the schedule configuration (steps vs epochs, accumulation, world size).",
         "If the jump is intended (a new phase), ramp to the new value over a few hundred steps."),
        ("lr_discontinuity", "resume", "warmup_end"),
    ),
    _cause(
        "warmup_end", "End of warm-up",
        "The spike came shortly after the warm-up ended and the learning rate reached its peak.",
        "The peak learning rate is the most unstable point of the schedule; a spike there means "
        "the peak is too high or was reached too fast.",
        ("Lengthen the warm-up (e.g. 2-3x more steps).",
         "Lower the peak learning rate.",
         "Add gradient clipping if there is none."),
        ("lr_jump", "spike"),
    ),
    _cause(
        "fp16_overflow", "fp16 overflow",
        "The mixed-precision loss scale halved repeatedly around the spike: fp16 gradients "
        "overflowed and steps were skipped.",
        "Skipped steps and a collapsing scale mean the numbers no longer fit in fp16; the run can "
        "end in NaN or in silent underflow.",
        ("Train in bf16 instead of fp16 where the hardware supports it.",
         "Keep numerically sensitive parts in fp32 (loss, softmax, layer norm).",
         "Lower the learning rate or clip gradients; raise the scaler's minimum scale."),
        ("loss_scale_collapse", "nan"),
    ),
    _cause(
        "bad_batch", "Bad batch",
        "A one-step spike with no precursor in gradient norm or learning rate, gone at the next "
        "step: one batch was unlike the rest.",
        "Harmless once, but it names data worth looking at (corrupt, mislabeled, extremely long, "
        "or a repeated junk document); if it recurs at the same position, it will hit every run.",
        ("Check the data at that position: map the step to the sample indices (step × batch size "
         "on the data order) and look at those samples.",
         "Skip the batches around it if the run is resumed from a checkpoint.",
         "Filter the data source it came from (dedup, length limits, quality filters)."),
        ("spike", "data", "outliers"),
    ),
    _cause(
        "policy_update", "Oversized policy update",
        "A KL term (how far one update moved the policy from the one that collected the data, or from "
        "the reference model) jumped far beyond the run's normal updates: that update was too large.",
        "A policy pushed far in one update can collapse (the reward drops, entropy goes to zero) and PPO's "
        "or GRPO's clipping no longer bounds it; the data of that update is not the problem, so skipping "
        "batches does not help.",
        ("Lower the learning rate, or tighten the clip range (PPO clip 0.2 -> 0.1).",
         "Stop the update's epochs early once the KL passes a target (SB3 `target_kl`, TRL `kl_target`), "
         "or raise the KL coefficient.",
         "Normalise advantages (per batch) and clip the value loss; check the reference or old policy is "
         "the one that produced the rollouts."),
        ("spike", "divergence"),
    ),
    _cause(
        "data", "Data source",
        "The data, not the optimizer: the spike is in one dataset's loss and not the others, or "
        "runs analysed together that share a data order spike (or shift to a new level) at the "
        "same step, where they all saw the same batch or reached the same shard boundary.",
        "The model is fine; the data delivered something unusual at that position (a shard of "
        "junk, a harder or differently mixed shard, a change of format, a tokenizer mismatch). "
        "Tuning the optimizer will not remove it.",
        ("Inspect the samples at that position (that source's, or the shared data order's).",
         "Check the preprocessing (encoding, tokenization, truncation) and the shard boundaries.",
         "Shuffle shards, or lower that source's mixture weight until it is cleaned.",
         "For a level shift at a shard boundary: compare runs from that step onwards only."),
        ("bad_batch", "spike", "level_shift"),
    ),
    _cause(
        "resume", "Resume",
        "The spike sits right after a resume boundary: state the run needed was not restored "
        "(optimizer moments, scheduler, data-loader position, RNG, loss scale).",
        "A freshly initialised Adam has no second-moment estimate, so its first updates are far "
        "too large; a restarted scheduler re-runs warm-up; a restarted loader repeats data.",
        ("Save and restore the optimizer state with the weights (optimizer.state_dict()).",
         "Restore the scheduler, the data-loader / sampler position, the grad scaler and the RNG "
         "state too.",
         "If the optimizer state is lost, re-warm the learning rate for a few hundred steps after "
         "the resume."),
        ("resume_overlap", "step_reset", "repeated_data", "lr_jump"),
    ),
    _cause(
        "out_of_memory", "Out of memory",
        "The run's last error says it ran out of memory (CUDA out of memory, OutOfMemoryError, "
        "RESOURCE_EXHAUSTED, the OOM killer); the memory trend before it is given.",
        "The run will crash at the same place again unless memory use goes down.",
        ("Lower the micro-batch or sequence length, or turn on activation checkpointing.",
         "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation.",
         "If memory grew step after step, find the tensor kept across steps first."),
        ("ended_early", "memory_growth"),
    ),
    _cause(
        "slowdown", "Slowdown before the event",
        "The run's throughput fell, its step time rose or it stalled just before the loss event.",
        "A loss event right after a slowdown points at the data loader (a stalled or skipped stream) or "
        "a node, not the optimizer.",
        ("Check the data loader's logs and the batches fed right after the slowdown.",
         "Check the node's health at that time."),
        ("throughput_drop", "stall", "spike"),
    ),
    _cause(
        "setting", "A wrong setting",
        "A logged setting no schedule makes right (a learning rate far above any optimizer's range on "
        "most rows) was in force when the event began: the event is what the setting does.",
        "Every batch is trained with the same setting, so skipping batches or rolling back to a "
        "checkpoint changes nothing: the run fails the same way until the setting is fixed.",
        ("Fix the setting against what was meant (5 for 5e-5 is a common typo; a schedule multiplier "
         "is sometimes logged under the LR's name) and train again; no batch needs skipping.",
         "If the early steps are worth keeping, resume from a checkpoint before {start_step|the event} "
         "with the corrected value."),
        ("settings", "spike", "divergence", "plateau"),
    ),
    _cause(
        "hardware", "One rank's hardware",
        "Only one rank went wrong (or is slower) while the others, holding the same weights, did not.",
        "A GPU that computes wrongly or slowly poisons or holds back the whole run.",
        ("Drain that rank's node and run GPU diagnostics (DCGM, ECC counters).",
         "Resume from a checkpoint before the event without that node."),
        ("rank_outlier", "spike", "nan"),
    ),
)

NAN_FROM_START: tuple[str, ...] = (
    "NaN from the very first logged step is a setup bug, not an instability: check the build "
    "(kernels, compile flags, mixed-precision settings) and the initialisation.",
    "Check the first batches (empty targets, all-padding sequences, labels out of range) and "
    "config values like learning rate, epsilon and loss scale.",
    "Run one step with anomaly detection (`spikelens replay`, or "
    "torch.autograd.set_detect_anomaly) to find the op that produces it.",
)
"""Tips for a metric that is NaN from its first point (no finite value before it)."""

def _code(code, title, what, why, tries, related=()) -> Entry:
    return Entry(code, "code", title, what, why, tuple(tries), tuple(related))


CODES: dict[str, Entry] = {e.name: e for e in (
    _code(
        "SL208", "Objective fall, frozen score or reward that never rose",
        "The score or reward the run is judged by (an accuracy, an F1, an RL return), read the right "
        "way up: a fall of a third or more of its level in one evaluation that stands out of its own "
        "noise (a spike when it is back within two evaluations, a collapse when it stays down); an "
        "accuracy-like score that repeated one exact value at every evaluation (the model's answers "
        "never changed); or a main reward whose best sustained stretch never stood materially above "
        "where it began (the policy learned nothing that shows).",
        "A collapse of the objective is the run losing what it had learned; a frozen score is a model "
        "that answers the same whatever it is shown; a reward that never moved is a policy that never "
        "improved, whatever its losses did.",
        ("Keep the checkpoint from before {start_step|the fall}; compare the evaluation at the fall with "
         "the one before it (same data, same code, same checkpoint?).",
         "For a frozen score: check the predictions are not one class (a constant or majority-class "
         "output), that the labels reach the loss and the metric, and that the weights are finite.",
         "For a reward that never rose: check the reward reaches the learner (its sign and scale), the "
         "exploration schedule and the learning rate; run a known-good baseline on the same environment."),
        ("divergence", "plateau", "spike", "overfitting"),
    ),
    _code(
        "SL209", "Reinforcement-learning run-away: value, policy std or update size",
        "A reinforcement learner's own quantities running away while its reward may still look fine: a "
        "Q-value or value estimate orders of magnitude above its first values and still growing (no "
        "fixed point), a Gaussian policy's standard deviation grown tenfold and still rising, or a PPO "
        "update whose approximate KL has a median of a nat or more (every update replaces the policy).",
        "A value estimate with no fixed point makes every target wrong; a policy whose std grew tenfold "
        "acts at random (its actions clipped to the bounds); updates that replace the policy each time "
        "make the trust region meaningless. The reward curve may hide all three for a while.",
        ("Q-values: lower the critic's learning rate, add a target network or update it less often, "
         "scale or clip the rewards.",
         "Policy std: bound the log-std and lower the entropy coefficient.",
         "Update KL: normalise the advantages, lower the clip range or the learning rate, and check the "
         "KL compares the old policy's log-probabilities with the new one's."),
        ("divergence", "nan", "spike"),
    ),
)}
"""Pages of codes that report a kind another code reports too (SL208 and SL209 report
`divergence` beside SL202): each code explains what its own detector judges."""

ENTRIES: dict[str, Entry] = {e.name: e for e in (*KINDS, *CAUSES)}
_ALIASES: dict[str, str] = {a: e.name for e in ENTRIES.values() for a in e.aliases}


def names(group: str | None = None) -> list[str]:
    """Every catalog name (or those of one group, `kind` or `cause`), in catalog order."""
    return [e.name for e in ENTRIES.values() if group is None or e.group == group]


def get(name: str) -> Entry | None:
    """The entry for a kind or cause, or None when the catalog has no page for it."""
    key = name.strip().lower().replace("-", "_")
    return ENTRIES.get(_ALIASES.get(key, key))


def lookup(name: str) -> Entry:
    """The entry for NAME (a kind, a cause, or a detector code like SL101)."""
    entry = get(name) or CODES.get(name.strip().upper())
    if entry is None:
        kind = _kind_of_code(name)
        entry = get(kind) if kind else None
    if entry is None:
        close = suggest(name)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UsageError(f"unknown kind or cause {name!r}{hint} (kinds: {', '.join(names('kind'))}; "
                         f"causes: {', '.join(names('cause'))})")
    return entry


def suggest(name: str) -> list[str]:
    """The names (kinds, causes, aliases, detector codes) closest to a mistyped one."""
    import difflib

    from ..detect.codes import codes_by_kind

    key = name.strip().lower().replace("-", "_")
    words = {*ENTRIES, *_ALIASES, *(code.lower() for codes in codes_by_kind().values() for code in codes)}
    close = difflib.get_close_matches(key, sorted(words), n=2, cutoff=0.6)
    return [c.upper() if c.startswith("sl") and c[2:].isdigit() else c for c in close]


def _kind_of_code(name: str) -> str | None:
    """The kind a code reports (SL101 → spike, SL306 → ended_early): its first kind."""
    from ..detect.codes import codes_by_kind

    code = name.strip().upper()
    return next((kind for kind, codes in codes_by_kind().items() if code in codes), None)


_PLACEHOLDER = re.compile(r"\{(start_step|peak_step|end_step)\|([^}]*)\}")


def advice(tip: str, finding=None) -> str:
    """A tip with its placeholders filled: `{start_step|the turn}` reads "step 1200" from the
    finding's own steps, or "the turn" where there is no finding (`spikelens explain`) or
    the finding has no such step."""
    def fill(m: re.Match) -> str:
        step = getattr(finding, m.group(1), None) if finding is not None else None
        return f"step {step}" if step is not None else m.group(2)

    return _PLACEHOLDER.sub(fill, tip)


def next_steps(finding, limit: int = 3) -> list[str]:
    """What to try for one finding: the tips of its most likely cause first, then its kind's,
    with the finding's steps written into them.

    A cause with at most 0.3 confidence is a guess; its tips come after the kind's.
    """
    tips: list[str] = []
    remedy = (finding.evidence or {}).get("remedy")
    if remedy:
        from ..remedy import advice_line

        tips.append(advice_line(remedy))
    if finding.kind == "nan" and _from_start(finding):
        return list(NAN_FROM_START[:limit])
    causes = sorted(finding.causes, key=lambda c: -float(c.confidence))
    strong = [c.cause for c in causes if float(c.confidence) > 0.3]
    weak = [c.cause for c in causes if float(c.confidence) <= 0.3]
    names = (*strong[:1],) if strong[:1] and strong[0] in OWNS_THE_ADVICE else (*strong[:1], finding.kind, *weak[:1])
    for name in names:
        for tip in _tries(name, finding):
            tip = advice(tip, finding)
            if tip not in tips:
                tips.append(tip)
    return tips[:limit]


OWNS_THE_ADVICE = ("setting", "policy_update")
"""Causes whose fix is the whole advice: a spike an LR of 5 drove gets no skip-the-batches recipe."""

_SETUP_CHECK = ("check that the optimizer holds the model's parameters and they require gradients, that the "
                "LR is not zero, and that labels line up with inputs (train on one batch: the loss must fall).")

READING_TIPS: dict[tuple[str, str], tuple[str, ...]] = {
    ("plateau", "chance"): (f"At chance: {_SETUP_CHECK}",
                            "After a blow-up to chance (an LR far too high): restart from the last checkpoint "
                            "before it with a lower LR or a warm-up."),
    ("plateau", "never"): (f"Never moved: {_SETUP_CHECK}",
                           "If the setup is right, the LR may be far too low for this model: try 10x."),
    ("plateau", "breakthrough"): ("Stuck, then a breakthrough: a larger LR, a better initialisation or a warm-up "
                                  "usually shortens the stuck stretch.",),
    ("settings", "learning_rate"): (
        "Check the config value against what was meant (5 for 5e-5 is a common typo; a schedule multiplier "
        "is sometimes logged under the LR's name).",
        "Every step trained at this LR is wasted: train again from the start, or from a checkpoint saved "
        "before the LR took this value."),
    ("settings", "loss_scale"): ("In fp16, turn dynamic loss scaling on (or train in bf16); in bf16 or fp32 "
                                 "a loss scale of 1 is right and needs nothing.",
                                 "If the run is fp16, look for gradients that underflow to zero (a grad "
                                 "norm at 0, a loss that stops moving)."),
    ("settings", "warmup_steps"): ("Add a warm-up of a few hundred to a few thousand steps.",
                                   "If the run trained well without it, nothing needs doing: a warm-up "
                                   "matters most for transformers and large learning rates."),
}
"""The kind's tips for one reading of it (`evidence.reading`, or `evidence.setting` for a wrong
setting): a plateau the model broke out of late gets no advice meant for a run at chance, and an
LR of 5 no advice about loss scaling."""


def _tries(name: str, finding) -> tuple[str, ...]:
    entry = get(name)
    if entry is None:
        return ()
    if name == finding.kind:
        ev = finding.evidence or {}
        reading = ev.get("setting") if name == "settings" else ev.get("reading")
        return READING_TIPS.get((name, reading), entry.tries)
    return entry.tries


def _from_start(finding) -> bool:
    """A NaN finding whose metric never had a finite value before it."""
    ev = finding.evidence or {}
    return "first_nonfinite_step" in ev and "last_finite" not in ev and "blowup_start_step" not in ev
