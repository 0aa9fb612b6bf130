// Package steps is Trellis's Gherkin vocabulary: godog step definitions
// that describe workflows on Trellis (queues and tasks, worker pools and
// processes, VINE graphs run by agents, agent memory, waiting, and
// assertions over the event log) and run them against a fresh Trellis per
// scenario.
//
// `trellis features run` runs feature files with exactly these steps, and
// `trellis features steps` lists them. A Go project adds them to its own
// godog suite with Register, next to its own steps:
//
//	func InitializeScenario(sc *godog.ScenarioContext) {
//		w := steps.Register(sc, steps.Config{})
//		sc.Step(`^my report is on disk$`, func(ctx context.Context) error {
//			t := w.Task() // "that task", as the Trellis steps left it
//			...
//		})
//	}
//
// Every step is one Definition (pattern, example, doc, and the function
// that runs it); Vocabulary lists them, and a step a feature uses that no
// definition matches fails with the closest definitions (Suggest).
//
// The steps decide nothing and append no events themselves: they call the
// scenario's server, whose domains decide and append.
package steps
