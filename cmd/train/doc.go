// Code generated from manual.txt by TestManualMatchesDoc; DO NOT EDIT.

// Command train reproduces and extends "Provable Benefits of RLVR over SFT
// for Reasoning Models: Learning to Backtrack Efficiently". This comment is
// its manual, printed by "train help": it is generated from manual.txt, the
// one copy of the manual (go test -run TestManualMatchesDoc -update).
//
// train: exact autodiff trainer for "Provable Benefits of RLVR over SFT for
// Reasoning Models: Learning to Backtrack Efficiently".
//
// usage:
//
//	train                  run the paper's headline experiment: W=15, K=15, L=5,
//	                       exact RLVR with sign gradient descent (lr 0.01) from the
//	                       pretrained bigram, until within 0.1% of the converged
//	                       hitting time; writes runs/fig3-4
//	train run [flags]      one training run (flags or -config FILE.json)
//	train eval [flags]     exact Markov-chain analysis of a policy or a checkpoint
//	                       (a transformer checkpoint: Monte Carlo and attention)
//	train sample DIR [flags]
//	                       rollouts (or golden paths) of any run folder's model as
//	                       token names, with length, hit and each step's probability
//	train export DIR [-out FILE]
//	                       the checkpointed model as .npz for numpy
//	train reproduce NAME... | all [-quick] [-out DIR]
//	                       regenerate results of the paper: CSV data, PNG figures
//	                       and a results.md table (claim, the paper, measured,
//	                       agreement, time) in runs/reproduce; -quick runs every
//	                       entry at a reduced size. Entries: fig3-4, thm1-pretrain,
//	                       thm2-sft, thm4-separation, corollary-search,
//	                       thm5-distill, fig5-sft-scaling, fig5-partial, fig6-ppo,
//	                       fig7-transformer (alias transformer), fig8-hetero; by
//	                       name only: compare-learners (the sweeps
//	                       docs/sweeps/compare-learners.json and
//	                       compare-learners-paper.json: both learners on the
//	                       paper's independent rollouts, at the paper's size on
//	                       equal budgets of 2G sampled tokens; -quick: the small
//	                       graphs),
//	                       rlvr-algorithms (exact RLVR, reinforce, ppo
//	                       with the state and fork baselines, grpo, rloo, dr-grpo
//	                       on the bigram, one sampled-token budget: W=K=5, L=3
//	                       and W=K=15, L=5; -quick: W=K=3, L=2 for the latter)
//	train sweep SPEC.json [flags]
//	                       many runs from one spec: a base config and a grid and/or
//	                       lists of values by JSON path; done runs are skipped,
//	                       checkpointed ones resumed
//	train aggregate DIR... [-out DIR] [-allow-missing]
//	                       a sweep's run folders into one CSV, a table of means
//	                       with 95% intervals over seeds, and figures
//	(reproduce, sweep and aggregate take their arguments and flags in any order)
//	train help             this text
//	train -cpuprofile FILE [COMMAND ...]
//	                       any of the above (none: the headline experiment) with
//	                       its CPU profile written to FILE (go tool pprof FILE)
//	train -trace FILE [COMMAND ...]
//	                       the same with an execution trace written to FILE (go
//	                       tool trace FILE), each step's phases marked as regions;
//	                       megabytes a second of run: trace a few steps
//
// graph flags (run and eval):
//
//	-W, -K, -L int         homogeneous graph (default 15, 15, 5)
//	-branches SPEC         heterogeneous graph, e.g. "2,2,3;5,1;4,4,4,4": ';' between
//	                       branches, ',' between the diamonds' multiedge counts
//
// train run flags:
//
//	-config FILE           JSON with the fields of config.json; flags override it
//	-trainer NAME          pretrain | sft | rlvr-exact | distill | reinforce | ppo |
//	                       grpo | rloo | dr-grpo (default rlvr-exact)
//	-model NAME            bigram (default) | transformer: a one-layer transformer
//	                       initialised to the starting bigram (sft, distill,
//	                       reinforce, ppo, grpo, rloo, dr-grpo; its hitting times are Monte Carlo, with
//	                       a 95% interval in metrics.csv and summary.json)
//	-init DIR              start from the bigram checkpointed in a run folder (e.g.
//	                       an sft run) instead of the pretrained world model
//	-optimizer NAME        sign (the paper's) | sgd | adam (default: see below)
//	-lr X                  learning rate (default: see below)
//	-steps N               step cap (default 20000)
//	-until X               stop within this relative distance of the limit hitting
//	                       time (for RLVR the exact optimum of the setting, over
//	                       every row it trains; the teacher's for distill, the SFT
//	                       limit for sft; pretrain: once no state puts more than X
//	                       on invalid transitions) (default 0.001; the bigram's
//	                       sampled trainers 0.01, every transformer run 0.05;
//	                       0 runs until the step cap or until no progress)
//	-train-source          RL trainers and distill: train the source row s0 -> f
//	                       too (default: it stays uniform like the fork-incoming
//	                       rows the paper fixes); the RLVR optimum is then lower
//	                       (it enters one branch first)
//	-seed N                seed of every random choice (default 1)
//	-max-tokens N          sampled trainers: stop once N tokens have been sampled,
//	                       stop_reason tokens (default 0: no budget)
//	-patience N            steps without a new best (the lowest hitting time for the
//	                       RL trainers, the closest to the limit for sft and
//	                       distill, the least invalid mass for pretrain) before
//	                       the run halves its rate (-lr-decay plateau) or stops
//	                       (default 1000; the bigram's sampled trainers 200, every
//	                       transformer run 100; 0: never). At the exact optimum of the
//	                       setting that is success (stop_reason optimum), at another
//	                       stationary point too (stationary); elsewhere exact
//	                       RLVR's is a stall, exit 1 (sign descent at a fixed lr
//	                       can lock into a cycle: W=15, K=30, L=5 at lr 0.01 does;
//	                       lr 0.001 converges), the others' a plateau
//	                       (a transformer's patience counts once its best is within
//	                       a factor 2 of the limit; farther, 5N steps without a
//	                       new best stop it at its rate)
//	-log-every N           metrics row every N steps (default 10)
//	-supervised-backward P sft on the bigram: also supervise a fraction P of
//	                       backward states
//	-distill-traces N      distill: N sampled teacher traces (0: exact teacher)
//	-teacher SPEC          distill: rlvr-limit or a run folder with a checkpoint
//	-checkpoint-every N    checkpoint every N steps (default 100; 0: at the end)
//	-tensorboard           also write each metrics row to TensorBoard event files
//	                       (events.out.tfevents.*) in the run folder: a scalar per
//	                       non-empty column at the row's step
//	-out DIR               run folder (default runs/<trainer>-<graph>-seed<seed>); a
//	                       folder holding another run is refused
//	-force                 replace a run folder that holds another run
//	-resume DIR            continue the run in DIR from its checkpoint (with the
//	                       configuration embedded in the checkpoint); -steps N (a
//	                       new step cap) and -until X (a new stop distance) are
//	                       the only flags it takes. A run its -until stopped is
//	                       still within it after a new -steps: -until 0 -steps N
//	                       trains it on to step N (a finished run says what
//	                       would train it on). The command that made a run, run
//	                       again after such a resume, still finds it
//	-max-bytes N           memory budget, >= 1 (default 3/4 of the machine): larger graphs
//	                       are refused before anything is allocated. Go's collector
//	                       runs at GOGC=50 unless the environment sets GOGC (a
//	                       run's heap grows to 1.5 times its live data between
//	                       collections); GOMEMLIMIT, when set, also bounds it
//
// sampled RLVR flags (reinforce, ppo, grpo, rloo, dr-grpo; each step samples a
// batch of rollouts of the current policy and updates from it):
//
//	-rollouts N            rollouts per step (default: the model's, see below)
//	-step-tokens N         while the hitting time H is long, draw about N/H rollouts a
//	                       step instead, at most -rollouts (at least one per minibatch,
//	                       whole groups); the count comes from the estimate the
//	                       horizon comes from, before any rollout is drawn (0: off)
//	-hindsight             reinforce, ppo: draw a step's rollouts as walks with
//	                       hindsight targets: ceil(rollouts / W) walks from s0 -> f,
//	                       each until it has reached every leaf (or the horizon),
//	                       each holding one rollout toward every target (its prefix
//	                       up to that target's leaf). For a policy that does not see
//	                       its target (the bigram; the transformer without -prompt,
//	                       which it refuses) these rollouts have the law of
//	                       independent ones, so the gradient is unbiased; a step
//	                       samples the walks' tokens, about a fifth of as many
//	                       rollouts' at the paper's size. tokens counts the walks';
//	                       the transformer's table and windows passes train each walk
//	                       token once, on its terms summed over the walk's rollouts.
//	                       The transformer's fresh measurements draw walks too, their
//	                       intervals taken over walks; its final value is measured on
//	                       independent rollouts, as without the flag (default: on for
//	                       the transformer's ppo and reinforce without -prompt, off
//	                       for the bigram, the paper's independent rollouts;
//	                       -hindsight=false turns it off)
//	-beta X                length penalty in the reward 1{hit} - beta |y| (3e-4)
//	-horizon-factor X      horizon = X times the current hitting time (default: the
//	                       model's, see below)
//	-baseline NAME         state (mean return from the state), state-target
//	                       (given the rollout's target), fork (state-target on returns
//	                       bootstrapped at the fork: an excursion's tokens see its own
//	                       rewards plus the target's mean return from the fork), batch,
//	                       gae (GAE with a tabular critic of state and target;
//	                       -lambda X, GAE's lambda (0.95), -critic-rate X, the
//	                       rate at which the critic follows each batch's returns
//	                       (0.5); the bigram only), or exact (each transition's
//	                       advantage beta (h(s) - h(s') - 1) from the exact values
//	                       of the bigram's own chain, or of the transformer's
//	                       table B's) (default: the model's, see below);
//	                       grpo, rloo, dr-grpo: group, the only one they take
//	-normalize-advantages  reinforce, ppo: divide advantages by their standard
//	                       deviation (true)
//	-epochs N, -minibatches M, -clip E
//	                       ppo, grpo, rloo, dr-grpo: passes, minibatches per pass,
//	                       ratio clip (2, 2, 0.2)
//	-lr-decay NAME         linear (the learning rate decays linearly over -steps) or
//	                       plateau (halved after -patience steps without a new
//	                       best, -halvings N times at most, then the run stops);
//	                       default plateau for the bigram's sampled trainers and
//	                       every transformer run, "" (a constant rate) otherwise
//	-kl-coef X, -entropy-coef X
//	                       ppo: KL penalty to the starting policy, entropy bonus;
//	                       grpo, rloo, dr-grpo: the k3 estimate of that KL on the
//	                       sampled tokens (default 0), no entropy bonus
//
// group-relative flags (grpo, rloo, dr-grpo: TRL's definitions; a group is
// -group-size rollouts toward one target, drawn per group; every token of a
// rollout gets its sequence's advantage from the group's rewards r = 1{hit} -
// beta |y|: grpo (r - mean)/(std + 1e-4), rloo r minus the mean of the others,
// dr-grpo r - mean; then PPO's clipped objective):
//
//	-group-size G          rollouts per group (default 8; divides -rollouts)
//	-loss-agg NAME         token (a minibatch's per-token terms summed over its
//	                       tokens; default for grpo and rloo) | sequence (each
//	                       rollout's mean, averaged over rollouts) | constant
//	                       (summed, over rollouts times the horizon; dr-grpo's
//	                       default)
//
// transformer flags (-model transformer):
//
//	-init-mode NAME        the exact initialisation: table (default: a logit table per
//	                       transition holds the starting bigram beside a zero
//	                       unembedding, at any width) | identity (the paper's:
//	                       one-hot embeddings, the bigram in the unembedding, width =
//	                       vocabulary)
//	-ops NAME              how the training graphs compute: fused (default: custom ops
//	                       whose backwards are written by hand, checked against
//	                       stock) | stock (gorgonia's stock ops only, every
//	                       derivative by its autodiff; the same model, slower)
//	-dim N                 width with -init-mode table (default 64; a multiple of -heads)
//	-table-lr X            learning rate of the logit table (default: 0.025 for ppo,
//	                       the bigram's rate for reinforce, grpo, rloo and dr-grpo,
//	                       -lr otherwise); the other parameters learn at -lr
//	-heads N               attention heads (default 1)
//	-context N             attention window in tokens (default 8)
//	-positional NAME       learned (default) | none
//	-prompt                put the target's token before s0 -> f, visible to every
//	                       position (the paper's bigram never sees the target)
//	-layer-norm            layer norm before the unembedding (the initialisation
//	                       stays exact)
//	-stride N, -windows N  training cuts rollouts into windows of N trained positions
//	                       (plus context) and fills the graph with -windows of them
//	                       (56, 256)
//	-train-tokens N        trained positions per update: a larger batch trains on a
//	                       seeded random subset of its windows, weighted so that the
//	                       gradient is unbiased (65536; 0: every token)
//	-table-tokens N        tokens per update of the logit table's own pass (sampled
//	                       RLVR with -init-mode table: the table learns from every
//	                       sampled token, as the bigram does, up to this many, an
//	                       unbiased random subset beyond) (0, the default: all)
//	-eval-rollouts N       Monte Carlo rollouts behind each metrics row (2000), fewer
//	-eval-tokens N         while the hitting time is long: at most N sampled tokens
//	                       (20M), never fewer than 200 rollouts
//	-final-rollouts N      Monte Carlo rollouts of a stop decision and of the final
//	-final-tokens N        value, each on rollouts of its own (10000), fewer while
//	                       the hitting time is long: at most N sampled tokens
//	                       (200M), never fewer than 200 rollouts
//
// defaults that depend on the trainer and the model: the optimizer, the learning
// rate, -rollouts, -baseline, -horizon-factor and -hindsight, when neither a flag
// nor the -config file sets them (both resolve alike; config.json records the
// values used):
//
//	bigram                 sign descent at lr 0.01 (the paper's); sampled trainers:
//	                       256 rollouts, horizon factor 2, adam at lr 0.025 for
//	                       ppo, grpo, rloo and dr-grpo, 0.1 for reinforce; fork
//	                       baseline (grpo, rloo, dr-grpo: group) (docs/defaults.md)
//	transformer            sampled trainers: adam at lr 0.001 for ppo, 0.003 for
//	                       reinforce, grpo, rloo and dr-grpo (the logit table at
//	                       -table-lr: 0.025 for ppo, the bigram's rate for the
//	                       others), 128 rollouts, fork baseline and horizon
//	                       factor 20 (grpo, rloo, dr-grpo: group baseline,
//	                       horizon factor 2) (docs/defaults.md); ppo and
//	                       reinforce draw walks with hindsight targets, unless
//	                       -prompt (docs/sampled-rlvr.md); sft, distill:
//	                       sign descent at lr 0.01, 256 sequences per step
//	An optimizer named without -lr takes the default rate when it is the default
//	optimizer, and 0.01 otherwise; -init-mode identity without -dim takes dim 0
//	(the vocabulary); -table-lr follows -lr where its default is -lr.
//
//	A value given is used exactly or refused (exit 2, one line naming the field
//	and what it takes): 0 is a value, never "the default" (-lr 0, -rollouts 0
//	and -horizon-factor 0 are refused; -max-tokens 0, -until 0 mean what their
//	flags say). Integers are decimal: -W 010 is ten, as in -branches; 0x4, 1_000
//	and 0o7 are refused, as are inf and nan for numbers (every command's
//	integer flags read alike). Flags, -config files and sweep specs are
//	resolved in one place: the trainer's and model's defaults first, then the
//	values given.
//
// which fields apply to which runs: a field given (as a flag, in a -config file
// or a sweep spec) to a run it does not apply to is refused, even as zero, and
// config.json records only the fields that apply:
//
//	the transformer:
//	    transformer, transformer.dim (-dim), transformer.heads (-heads),
//	    transformer.context (-context), transformer.positional (-positional),
//	    transformer.layer_norm (-layer-norm), transformer.prompt (-prompt),
//	    transformer.init (-init-mode), transformer.ops (-ops),
//	    transformer.stride (-stride), transformer.windows (-windows),
//	    transformer.eval_rollouts (-eval-rollouts),
//	    transformer.eval_tokens (-eval-tokens),
//	    transformer.final_rollouts (-final-rollouts),
//	    transformer.final_tokens (-final-tokens),
//	    transformer.train_tokens (-train-tokens)
//	the transformer with init table:
//	    transformer.table_lr (-table-lr)
//	the transformer with init table, under reinforce, ppo, grpo, rloo, dr-grpo:
//	    transformer.table_tokens (-table-tokens)
//	sft, rlvr-exact, distill, reinforce, ppo, grpo, rloo, dr-grpo:
//	    init (-init)
//	optimizer adam:
//	    train.optimizer.beta1, train.optimizer.beta2, train.optimizer.eps
//	lr_decay plateau:
//	    train.halvings (-halvings)
//	reinforce, ppo, grpo, rloo, dr-grpo:
//	    train.max_tokens (-max-tokens), train.step_tokens (-step-tokens),
//	    train.beta (-beta), train.horizon_factor (-horizon-factor),
//	    train.baseline (-baseline)
//	sft on the bigram:
//	    train.supervised_backward (-supervised-backward)
//	reinforce, ppo, grpo, rloo, dr-grpo; on the transformer also sft and distill:
//	    train.rollouts (-rollouts)
//	reinforce, ppo:
//	    train.hindsight (-hindsight),
//	    train.normalize_advantages (-normalize-advantages)
//	ppo, grpo, rloo, dr-grpo:
//	    train.epochs (-epochs), train.minibatches (-minibatches),
//	    train.clip (-clip), train.kl_coef (-kl-coef)
//	ppo:
//	    train.entropy_coef (-entropy-coef)
//	grpo, rloo, dr-grpo:
//	    train.group_size (-group-size), train.loss_agg (-loss-agg)
//	baseline gae (reinforce, ppo):
//	    train.lambda (-lambda), train.critic_rate (-critic-rate)
//	distill:
//	    train.distill_traces (-distill-traces), teacher (-teacher)
//	rlvr-exact, distill, reinforce, ppo, grpo, rloo, dr-grpo:
//	    train.train_source (-train-source)
//	every other field applies to every run.
//
//	A run folder holds config.json, vocab.txt (the token names; its header says
//	which ids are the model's rows), metrics.csv (step, hitting_time, objective,
//	mean a, b, c, d weighted by visits, and for pretrain invalid_mass, bound_ratio;
//	batch statistics for sampled RLVR: rewards, lengths, entropy, gradient norm,
//	token rates and more, see README; the Monte Carlo interval for a transformer;
//	lr, step_seconds, wall_seconds), metrics.jsonl (the same rows as JSON
//	objects), abcd.csv (step, depth, a, b, c, d weighted by visits, then the
//	same per copy), checkpoint.bin, and when
//	the run completes hitting_time.png and abcd.png (pretrain: invalid_mass.png;
//	a transformer: attention.png, its mean attention by query position and
//	distance back, and on the prompt) and summary.json (written last).
//	On a terminal a bar shows the way to what ends the run: the distance to the
//	limit against -until (log scale), or the steps, whichever is further along,
//	with the step, the hitting time, tokens/s and (ppo) the KL of one row;
//	elsewhere one log line per second.
//	SIGINT or SIGTERM writes a checkpoint and exits 130 or 143 with the command
//	that resumes; the resumed run reaches the same metrics bit for bit.
//
// train eval flags:
//
//	-policy NAME           pretrained | sft-limit | rlvr-limit (default pretrained)
//	-checkpoint DIR        evaluate the model checkpointed in a run folder (its graph
//	                       and setting come from it). A transformer is not a Markov
//	                       policy: Monte Carlo only (-mc default: the run's
//	                       -eval-rollouts; -horizon default: the run's, 50 times the
//	                       starting hitting time), its success rate, the attention
//	                       summary (also drawn as DIR/attention.png, unless a run is
//	                       training in DIR) and the theory; the JSON has the
//	                       bigram's mc_* keys, mc_horizon, attention
//	-train-source          the RLVR optimum of the setting with the source row trained
//	                       (default: frozen)
//	-json                  one JSON object: hitting_time, per_target, abcd (per copy),
//	                       abcd_visits (weighted by visits), abcd_visits_mean and
//	                       abcd_mean (pooled, each way), theory (with the setting's
//	                       rlvr_optimum, its policy and certificate), states (and
//	                       mc_* keys with -mc)
//	-probs                 also every state's transition probabilities, by token
//	                       name (transition_probs in the JSON; not for a transformer,
//	                       whose probabilities depend on the rollout: train sample
//	                       -probs)
//	-mc N                  also run N seeded Monte Carlo rollouts (refused without
//	                       -horizon when they would take hours; 0: none, which a
//	                       transformer -checkpoint, measured by Monte Carlo only,
//	                       refuses)
//	-horizon H             Monte Carlo horizon in transitions (0: none, which a
//	                       transformer -checkpoint refuses: its rollouts need a limit)
//	-seed S                Monte Carlo seed (default 1)
//	-search-agent          with -mc: the rollouts are the Corollary's search agent's,
//	                       which refuses any edge state already used in the rollout
//	                       (each refusal costs a step); the mc_* keys describe them
//
// train sample DIR flags (any run folder: bigram, pretrained or transformer):
//
//	-n N                   rollouts or golden paths to print (default 5)
//	-target T              target leaf 1..W of every one (0, the default: uniform)
//	-seed S                rollout i draws from the stream (S, i), as the Monte
//	                       Carlo's rollout i does (default 1)
//	-golden                golden paths (shortest, uniform multiedges), each checked
//	                       by the verifier, instead of samples of the model
//	-probs                 each transition's probability under the model (the
//	                       sampler's own; a golden path's replayed)
//	-horizon H             stop a rollout after H transitions (0: a transformer's
//	                       Monte Carlo horizon, 50 times its starting bigram's
//	                       hitting time; for a bigram 50 times the pretrained one's)
//	-json                  one JSON object: run, model, trainer, step, graph, seed,
//	                       horizon, rollouts [{target, golden, tokens, transitions,
//	                       hit, shortest, probs}]
//	-max-bytes N           memory budget, as for run (default 3/4 of the machine):
//	                       a checkpoint, graph or rollout (-horizon) that would
//	                       not fit is refused before the first rollout; rollouts
//	                       are printed as they are drawn, whatever -n is
//
// train export DIR flags:
//
//	Writes an .npz (numpy.load reads it without allow_pickle): every parameter
//	by name and shape (a bigram's logits, one per valid transition; a
//	transformer's E, P, WQ, WK, WV, WO, LN_gain, LN_bias, U, B; a pretrained
//	dense bigram's (states, states) logits), transitions (the (from, to) token
//	ids of each logit or entry of B, int64; for a dense bigram the valid ones),
//	a bigram's probs (one per transition), vocab (token names by id), step and
//	config (JSON text).
//	-out FILE              the file to write (default DIR/model.npz); a folder, or
//	                       a missing folder, is refused
//	-max-bytes N           memory budget, as for run: refused before writing
//
// train sweep SPEC.json flags:
//
//	A spec is one JSON object: "base" (a config file's fields; each run's
//	settings are set on it as given and the result resolved as a -config file
//	is, so each run takes its own trainer's and model's defaults and a field
//	that does not apply to a run is refused naming the run), "grid" (a JSON path of config.json and its values,
//	e.g. "train.seed": [1, 2, 3], "graph": [{"W": 3, "K": 3, "L": 2}]; the runs
//	are every combination), "list" (entries setting several paths at once, e.g.
//	{"model": "transformer", "transformer.prompt": true}), "lists" (several named
//	lists, combined with each other) and "out" (the sweep's folder, default
//	runs/sweeps/<spec name>). A value for an object path ("graph") replaces the
//	whole object; a path into a graph the base does not give sets it on the
//	default graph; a run may not set both "graph" and a path inside it
//	("graph.W"). Run i is always the same run: lists outermost (sorted by
//	name), then the grid's paths sorted, the last fastest, values in the spec's
//	order. Each run is resolved like train run's config before any work; its
//	folder is <slug>-<hash of its config.json>; sweep.json indexes them.
//	-out DIR               the sweep's folder (default: the spec's out)
//	-jobs N                runs trained at once (default: the number of cores). A
//	                       run's sampling already uses every core: for small graphs
//	                       (steps of milliseconds) -jobs = cores is fastest; for
//	                       large sampled runs (the paper's size, the transformer)
//	                       use 1 or 2 and let each run have the cores
//	-shard i/n             train only the runs whose index is i modulo n. Without
//	                       it, a Slurm array task takes SLURM_ARRAY_TASK_ID of
//	                       TRAIN_SWEEP_SHARDS (the printed script sets it: a task
//	                       resubmitted alone keeps its runs; unset, of the array
//	                       submitted: SLURM_ARRAY_TASK_MIN..MAX, or _COUNT)
//	                       and a Kubernetes Indexed Job pod JOB_COMPLETION_INDEX of
//	                       TRAIN_SWEEP_SHARDS (the manifest sets it); -shard and
//	                       those variables together are refused
//	-dry-run               list the runs: index, state (new, resumable, done,
//	                       stalled), folder, settings
//	-print slurm|k8s       print an sbatch job array or a Kubernetes Indexed Job
//	                       that runs this sweep, and write sweep.json; with -tasks N
//	                       (default one task per run; fewer: shards), -cpus N (1),
//	                       -mem M, -parallel N, and for slurm -time, -partition,
//	                       -binary; for k8s -image, -claim, -mount
//	A folder of another config is refused; SIGINT or SIGTERM checkpoints every
//	running run and exits 130 or 143: run the same command again to resume. A
//	Slurm task warned of its time limit (--signal=B:USR1@120) checkpoints and
//	requeues itself.
//
// train aggregate DIR... flags:
//
//	Reads every run folder under the DIRs (several shards' or machines' copies
//	of the sweep's folder may be given); with sweep.json, its runs are the ones
//	expected. Writes runs.csv (one row per run per logged step: run, index,
//	model, trainer, graph, seed, optimizer, lr, rollouts_per_step, baseline,
//	prompt, every other config path that varies, then every metrics column),
//	summary.csv and summary.md (per group of runs equal but for the seed: seeds,
//	mean and 95% Student t interval of the final hitting time, of the steps and
//	wall seconds to within 5% of the limit, and of the final success rate), and
//	hitting_time-<graph>.png (mean over seeds with a 95% band).
//	-out DIR               where to write (default DIR/aggregate)
//	-allow-missing         exit 0 even if runs are missing, incomplete, damaged (a
//	                       summary.json that does not parse, a metrics.csv cut
//	                       short) or stalled; without it they are named and the
//	                       exit code is 1
//	-combine               aggregate the folders of several sweeps (sweep.json of
//	                       other names, or of the same name and other runs)
//	                       together: runs.csv gets a sweep column after run, and a
//	                       group of summary.md pools the equal configurations of
//	                       every sweep; without it several sweeps are refused
//
// exit codes: 0 success, 1 failure, 2 bad input (one line naming the field),
// 130/143 interrupted (checkpoint written).
//
// examples:
//
//	train run -trainer sft -W 6 -K 6 -L 3 -steps 3000
//	train run -trainer distill -teacher runs/fig3-4 -until 0.01
//	train run -branches "2,2,3;5,1;4,4,4,4" -out runs/hetero
//	train run -resume runs/fig3-4
//	train run -model transformer -trainer ppo -W 5 -K 5 -L 3
//	train eval -policy sft-limit
//	train eval -checkpoint runs/fig3-4 -mc 10000 -json
//	train sample runs/fig3-4 -n 3 -probs
//	train export runs/fig3-4
//	train reproduce all
//	train sweep docs/sweeps/compare-learners.json -jobs 2
//	train sweep docs/sweeps/compare-learners.json -print slurm -tasks 20 -time 02:00:00 > sweep.sbatch
//	train aggregate runs/sweeps/compare-learners
package main
