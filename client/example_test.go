package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/workers"
)

// A Go program adds tasks to a running Trellis and runs a pool of
// handlers that works them. The server here is started in-process with
// authentication on, as `trellis serve --auth` would be; a program
// normally connects to one already running, with the URL it printed and a
// token from `trellis token create`.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "trellis-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := server.Start(ctx, server.Config{DataDir: dir, NATSAddr: "127.0.0.1:0", ServeAPI: true, Auth: true})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	adminToken, err := auth.ReadSecret(srv.Info().AdminTokenFile)
	if err != nil {
		log.Fatal(err)
	}
	mailer, err := srv.Auth().Create(ctx, auth.CreateRequest{Name: "mailer", Role: "worker", Queues: []string{"emails"}})
	if err != nil {
		log.Fatal(err)
	}

	// The producer's side: connect with the server's URL and a token
	// that may add tasks (admin), and add two.
	producer, err := client.Connect(ctx, srv.Info().NATSURL, client.Options{Token: adminToken})
	if err != nil {
		log.Fatal(err)
	}
	defer producer.Close()
	for _, to := range []string{"ada@example.com", "grace@example.com"} {
		if _, err := producer.Queue().Add(ctx, trellis.AddTaskRequest{Queue: "emails", Objective: "Send the welcome mail to " + to}); err != nil {
			log.Fatal(err)
		}
	}

	// The worker's side: a worker token for the queue, and a pool of two
	// handlers that works it.
	c, err := client.Connect(ctx, srv.Info().NATSURL, client.Options{Token: mailer.Token})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	sent := make(chan string, 2)
	send := workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		sent <- task.Objective
		return &trellis.Checkpoint{WhatWasDone: "sent"}, nil
	})
	pool, err := c.NewPool(send, workers.Config{Queue: "emails", Worker: "mailer", Concurrency: 2, Logger: discard()})
	if err != nil {
		log.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- pool.Run(pctx) }()
	<-sent
	<-sent
	for {
		list, err := c.Queue().List(ctx, trellis.ListRequest{Queue: "emails", Status: "done"})
		if err != nil {
			log.Fatal(err)
		}
		if len(list.Tasks) == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-ran; err != nil {
		log.Fatal(err)
	}
	fmt.Println("2 welcome mails sent and recorded as done")
	// Output: 2 welcome mails sent and recorded as done
}
