package reproduce

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlvr-backtrack/backtrack/eval"
	"github.com/rlvr-backtrack/backtrack/experiment"
	"github.com/rlvr-backtrack/backtrack/figures"
	"github.com/rlvr-backtrack/backtrack/nn"
	"github.com/rlvr-backtrack/backtrack/sweep"
	"github.com/rlvr-backtrack/backtrack/tasks"
	"github.com/rlvr-backtrack/backtrack/trainers"
)

func (r *reproducer) fig34(dir string) (string, string, error) {
	rc := experiment.DefaultConfig()
	k := r.sized(15, 5)
	rc.Graph = graphConfig(k, k, r.sized(5, 3))
	s, err := r.trainEntry(dir, rc)
	if err != nil {
		return "", "", err
	}
	init, final, limit := experiment.Value(s.InitialHittingTime), experiment.Value(s.FinalHittingTime), experiment.Value(s.LimitHittingTime)
	ok := rel(init, s.Theory.H0) < 1e-9 && s.Converged && s.FinalABCD != nil && min(experiment.Value(s.FinalABCD[0]), experiment.Value(s.FinalABCD[1]), experiment.Value(s.FinalABCD[2]), experiment.Value(s.FinalABCD[3])) > 0.999
	m := fmt.Sprintf("%s: %s (H_0 %s) -> %.6g in %d steps (exact limit %s, 4WK = %s)", s.Graph, experiment.FormatNumber(init), experiment.FormatNumber(s.Theory.H0), final, s.Steps, experiment.FormatNumber(limit), experiment.FormatNumber(s.Theory.RLVRLeading))
	return m, yes(ok), nil
}

func (r *reproducer) thm1(dir string) (string, string, error) {
	rc := experiment.Defaults(trainers.BigramModel, trainers.Pretrain)
	rc.Graph = graphConfig(2, 2, 2)
	rc.Train.Optim = nn.OptimConfig{Name: "sgd", LR: 50}
	rc.Train.Steps, rc.Train.Until, rc.Train.LogEvery = 400, 0, 1
	s, err := r.trainEntry(dir, rc)
	if err != nil {
		return "", "", err
	}
	ok := experiment.Value(s.BoundRatio) <= 1 && experiment.Value(s.InvalidMass) < 0.01
	return fmt.Sprintf("%s, sgd: invalid mass %.3g after %d steps; largest ratio to the bound %.3g", s.Graph, experiment.Value(s.InvalidMass), s.Steps, experiment.Value(s.BoundRatio)), yes(ok), nil
}

func (r *reproducer) thm2(dir string) (string, string, error) {
	rc := experiment.Defaults(trainers.BigramModel, trainers.SFT)
	k, l := r.sized(6, 3), r.sized(3, 2)
	rc.Graph = graphConfig(6, k, l)
	rc.Train.Optim = nn.OptimConfig{Name: "adam", LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	s, err := r.trainEntry(dir, rc)
	if err != nil {
		return "", "", err
	}
	L := float64(l)
	// The run's abcd.png again, with the values Theorem 2 predicts.
	a, err := experiment.ReadMetrics(filepath.Join(dir, "abcd.csv"))
	if err != nil {
		return "", "", err
	}
	err = figures.ABCD(filepath.Join(dir, "abcd.png"), fmt.Sprintf("a, b, c, d per depth under %s training, graph %s", s.Trainer, s.Graph), a.Rows,
		figures.Theory{Y: L / (L + 1), Label: fmt.Sprintf("Theorem 2: b = L/(L+1) = %.4g", L/(L+1))}, figures.Theory{Y: 1 / (L + 1), Label: fmt.Sprintf("Theorem 2: d = 1/(L+1) = %.4g", 1/(L+1))})
	if err != nil {
		return "", "", err
	}
	b, d := experiment.Value(s.FinalABCD[1]), experiment.Value(s.FinalABCD[3])
	ok := s.Converged && math.Abs(b-L/(L+1)) < 1e-12 && math.Abs(d-1/(L+1)) < 1e-12
	return fmt.Sprintf("%s: hitting time %s -> %.6g (SFT limit %.6g) in %d steps; b = %.6f, d = %.6f", s.Graph,
		experiment.FormatNumber(experiment.Value(s.InitialHittingTime)), experiment.Value(s.FinalHittingTime), experiment.Value(s.LimitHittingTime), s.Steps, b, d), yes(ok), nil
}

// exactH is the exact hitting time of a named policy on a graph.
func exactH(c tasks.Config, policy string) (float64, error) {
	g, err := tasks.New(c)
	if err != nil {
		return 0, err
	}
	p, err := eval.Named(g, policy)
	if err != nil {
		return 0, err
	}
	res, err := eval.NewAnalyzer(g).Analyze(p)
	if err != nil {
		return 0, err
	}
	return res.HittingTime, nil
}

func (r *reproducer) thm4(dir string) (string, string, error) {
	const w = 6
	kmax := r.sized(12, 6)
	var csv strings.Builder
	csv.WriteString("policy,K,L,hitting_time\n")
	var sft, fits, rlvr []figures.Series
	worst := 0.0 // largest relative gap between the fitted growth per depth and (L+1)^2/L
	for l := 1; l <= 5; l++ {
		s, q := figures.Series{Name: fmt.Sprintf("SFT limit, L=%d", l), Color: figures.Color(l - 1)}, figures.Series{Name: fmt.Sprintf("RLVR limit, L=%d", l), Dashed: true}
		for k := 1; k <= kmax; k++ {
			hs, err := exactH(graphConfig(w, k, l), "sft-limit")
			if err != nil {
				return "", "", err
			}
			hr, err := exactH(graphConfig(w, k, l), "rlvr-limit")
			if err != nil {
				return "", "", err
			}
			fmt.Fprintf(&csv, "sft-limit,%d,%d,%s\nrlvr-limit,%d,%d,%s\n", k, l, experiment.FormatExact(hs), k, l, experiment.FormatExact(hr))
			s.X, s.Y = append(s.X, float64(k)), append(s.Y, hs)
			q.X, q.Y = append(q.X, float64(k)), append(q.Y, hr)
		}
		n := len(s.Y)
		growth, theory := s.Y[n-1]/s.Y[n-2], float64((l+1)*(l+1))/float64(l)
		worst = math.Max(worst, rel(growth, theory))
		fit := figures.Series{Name: fmt.Sprintf("fitted growth, L=%d: x%.3f per depth ((L+1)^2/L = %.3f)", l, growth, theory), Fit: true, Color: s.Color}
		for _, k := range s.X {
			fit.X, fit.Y = append(fit.X, k), append(fit.Y, s.Y[n-1]*math.Pow(growth, k-s.X[n-1]))
		}
		sft, fits, rlvr = append(sft, s), append(fits, fit), append(rlvr, q)
	}
	if err := os.WriteFile(filepath.Join(dir, "hitting_times.csv"), []byte(csv.String()), 0o644); err != nil {
		return "", "", err
	}
	rlvr = sameCurves(rlvr, "RLVR limit, every L (the same)")
	for i := range rlvr {
		rlvr[i].Color = figures.Color(5 + i)
	}
	err := figures.Figure{Title: fmt.Sprintf("Exact hitting times of the SFT and RLVR limits, W=%d; dotted: growth fitted on the last two depths", w),
		Panels: []figures.Panel{{XLabel: "depth K (diamonds per branch)", YLabel: "exact hitting time H_f (transitions, log scale)", LogY: true,
			Series: append(append(sft, fits...), rlvr...)}}}.Save(filepath.Join(dir, "separation.png"))
	if err != nil {
		return "", "", err
	}
	h5, _ := exactH(graphConfig(w, kmax, 5), "sft-limit")
	r5, _ := exactH(graphConfig(w, kmax, 5), "rlvr-limit")
	ok := worst < 0.05 && rel(r5, float64((2*kmax+1)*(2*w-1))) < 1e-9
	return fmt.Sprintf("W=%d, K=%d, L=5: SFT %.3g vs RLVR %s; SFT grows by (L+1)^2/L per depth (fit within %.1f%%), not L", w, kmax, h5, experiment.FormatNumber(r5), 100*worst),
		map[bool]string{true: "imprecise", false: "no"}[ok], nil
}

func (r *reproducer) corollary(dir string) (string, string, error) {
	const w = 5
	kmax, n := r.sized(8, 4), r.sized(2000, 300)
	var csv strings.Builder
	csv.WriteString("policy,K,L,search_agent_hitting_time,ci95\n")
	var lines []figures.Series
	ok := true
	for _, pol := range []string{"sft-limit", "rlvr-limit"} {
		for _, l := range []int{1, 3, 5} {
			s := figures.Series{Name: fmt.Sprintf("%s, L=%d (%d rollouts, 95%% interval)", pol, l, n), Dashed: pol == "rlvr-limit"}
			for k := 2; k <= kmax; k++ {
				g, err := tasks.New(graphConfig(w, k, l))
				if err != nil {
					return "", "", err
				}
				p, _ := eval.Named(g, pol)
				sp, err := eval.NewSampler(g, p)
				if err != nil {
					return "", "", err
				}
				mc, err := sp.SearchMonteCarlo(context.Background(), n, 0, 1)
				if err != nil {
					return "", "", err
				}
				fmt.Fprintf(&csv, "%s,%d,%d,%s,%s\n", pol, k, l, experiment.FormatExact(mc.HittingTime), experiment.FormatExact(mc.CI95))
				s.X, s.Y = append(s.X, float64(k)), append(s.Y, mc.HittingTime)
				s.Lo, s.Hi = append(s.Lo, mc.HittingTime-mc.CI95), append(s.Hi, mc.HittingTime+mc.CI95)
				scale := float64(w * k * (l + 1))
				if pol == "rlvr-limit" {
					scale = float64(w * k)
				}
				if q := mc.HittingTime / scale; q < 0.3 || q > 4 {
					ok = false
				}
			}
			lines = append(lines, s)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "search_agent.csv"), []byte(csv.String()), 0o644); err != nil {
		return "", "", err
	}
	err := figures.Figure{Title: fmt.Sprintf("Hitting time with the search agent, W=%d: Monte Carlo, %d rollouts each, 95%% intervals", w, n),
		Panels: []figures.Panel{{XLabel: "depth K", YLabel: "hitting time with the agent (steps, refusals included)", Series: lines}}}.Save(filepath.Join(dir, "search_agent.png"))
	if err != nil {
		return "", "", err
	}
	last := lines[2].Y[len(lines[2].Y)-1]
	return fmt.Sprintf("W=%d, K=%d: SFT with the agent %.4g at L=5 (linear in K and L), RLVR %.4g for every L", w, kmax, last, lines[5].Y[len(lines[5].Y)-1]),
		map[bool]string{true: "yes (with the dead-end rule)", false: "no"}[ok], nil
}

func (r *reproducer) thm5(dir string) (string, string, error) {
	rc := experiment.Defaults(trainers.BigramModel, trainers.Distill)
	k := r.sized(15, 5)
	rc.Graph = graphConfig(k, k, r.sized(5, 3))
	// The teacher is fig3-4's run: rerun it when it is missing, of another
	// size or unreadable (written by an older build).
	teacher := filepath.Join(r.out, "fig3-4")
	if b, err := experiment.LoadBigram(teacher, nil); err != nil || b.Graph.Config.Name() != rc.Graph.Name() {
		if _, _, err := r.fig34(teacher); err != nil {
			return "", "", err
		}
	}
	rc.Teacher, rc.Train.Until = teacher, 0.005
	s, err := r.trainEntry(dir, rc)
	if err != nil {
		return "", "", err
	}
	limit := s.Theory.RLVRLimit
	ok := rel(experiment.Value(s.FinalHittingTime), limit) < 0.01
	return fmt.Sprintf("%s: %s -> %.6g in %d steps (RLVR limit %s)", s.Graph, experiment.FormatNumber(experiment.Value(s.InitialHittingTime)), experiment.Value(s.FinalHittingTime), s.Steps, experiment.FormatNumber(limit)), yes(ok), nil
}

func (r *reproducer) fig5Scaling(dir string) (string, string, error) {
	const w = 6
	kmax := r.sized(12, 6)
	var lines []figures.Series
	var csv strings.Builder
	csv.WriteString("K,L,sft_limit_hitting_time\n")
	straight := true
	for l := 1; l <= 5; l++ {
		s := figures.Series{Name: fmt.Sprintf("L=%d", l)}
		for k := 1; k <= kmax; k++ {
			h, err := exactH(graphConfig(w, k, l), "sft-limit")
			if err != nil {
				return "", "", err
			}
			fmt.Fprintf(&csv, "%d,%d,%s\n", k, l, experiment.FormatExact(h))
			s.X, s.Y = append(s.X, float64(k)), append(s.Y, h)
		}
		n := len(s.Y)
		// Straight in log scale: the last two growth factors agree.
		a, b := s.Y[n-1]/s.Y[n-2], s.Y[n-2]/s.Y[n-3]
		straight = straight && rel(a, b) < 0.05
		lines = append(lines, s)
	}
	if err := os.WriteFile(filepath.Join(dir, "sft_scaling.csv"), []byte(csv.String()), 0o644); err != nil {
		return "", "", err
	}
	err := figures.Figure{Title: fmt.Sprintf("SFT limit: exact hitting time against depth, W=%d", w),
		Panels: []figures.Panel{{XLabel: "depth K", YLabel: "exact hitting time H_f (transitions, log scale)", LogY: true, Series: lines}}}.Save(filepath.Join(dir, "sft_scaling.png"))
	if err != nil {
		return "", "", err
	}
	return fmt.Sprintf("W=%d, K=1..%d: log H straight in K for L=1..5 (L=5, K=%d: %.3g)", w, kmax, kmax, lines[4].Y[len(lines[4].Y)-1]), yes(straight), nil
}

func (r *reproducer) fig5Partial(dir string) (string, string, error) {
	const w = 6
	k, draws := r.sized(6, 3), r.sized(100, 10)
	var lines []figures.Series
	var csv strings.Builder
	csv.WriteString("L,p,mean_hitting_time,ci95\n")
	decreasing := true
	for l := 1; l <= 5; l++ {
		g, err := tasks.New(graphConfig(w, k, l))
		if err != nil {
			return "", "", err
		}
		an := eval.NewAnalyzer(g)
		s := figures.Series{Name: fmt.Sprintf("L=%d (mean over draws, 95%% interval)", l)}
		for i := 0; i <= 10; i++ {
			p := float64(i) / 10
			hs := make([]float64, 0, draws)
			for d := range draws {
				rng := rand.New(rand.NewPCG(uint64(l), uint64(1000*i+d)))
				_, sup, err := trainers.SFTPairs(g, p, rng)
				if err != nil {
					return "", "", err
				}
				res, err := an.Analyze(eval.PolicySFTLimitSupervised(g, sup))
				if err != nil {
					return "", "", err
				}
				hs = append(hs, res.HittingTime)
			}
			e := sweep.Mean95(hs)
			mean, ci := e.Mean, e.CI95
			fmt.Fprintf(&csv, "%d,%g,%s,%s\n", l, p, experiment.FormatExact(mean), experiment.FormatExact(ci))
			if n := len(s.Y); n > 0 && mean > s.Y[n-1]*(1+1e-9) {
				decreasing = false
			}
			s.X, s.Y = append(s.X, p), append(s.Y, mean)
			s.Lo, s.Hi = append(s.Lo, mean-ci), append(s.Hi, mean+ci)
		}
		lines = append(lines, s)
	}
	if err := os.WriteFile(filepath.Join(dir, "partial_supervision.csv"), []byte(csv.String()), 0o644); err != nil {
		return "", "", err
	}
	limit, err := exactH(graphConfig(w, k, 5), "rlvr-limit")
	if err != nil {
		return "", "", err
	}
	err = figures.Figure{Title: fmt.Sprintf("SFT supervising a fraction p of backward states, W=K=%d (%d draws per p; each draw exact)", k, draws),
		Panels: []figures.Panel{{XLabel: "fraction p of backward states supervised", YLabel: "mean exact hitting time (transitions, log scale)", LogY: true, Series: lines,
			Lines: []figures.Theory{{Y: limit, Label: "RLVR limit " + experiment.FormatNumber(limit) + " (exact; the same for every L)"}}}}}.Save(filepath.Join(dir, "partial_supervision.png"))
	if err != nil {
		return "", "", err
	}
	l5 := lines[4]
	return fmt.Sprintf("W=%d, K=%d, L=5: %.4g at p=0 -> %.4g at p=1 (the RLVR limit)", w, k, l5.Y[0], l5.Y[10]), yes(decreasing), nil
}
