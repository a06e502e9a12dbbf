// k8s-validate reads Kubernetes manifests (multi-document YAML, e.g. `helm template` output) on
// stdin and decodes each one strictly against the Kubernetes API types — client-go's scheme, plus
// the Prometheus Operator's monitoring/v1 and KEDA's keda.sh/v1alpha1 — so an unknown field, a
// wrong type or a duplicate key fails. Kinds it has no types for (Strimzi's KafkaTopic) are reported as unchecked.
//
// Output: one JSON line per object ({"kind","name","status","error"}); exit 1 if any is invalid.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

type result struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

func main() {
	types := runtime.NewScheme()
	if err := scheme.AddToScheme(types); err != nil {
		panic(err)
	}
	if err := monitoringv1.AddToScheme(types); err != nil {
		panic(err)
	}
	if err := kedav1alpha1.AddToScheme(types); err != nil {
		panic(err)
	}
	strict := serializer.NewCodecFactory(types, serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(os.Stdin))
	out := json.NewEncoder(os.Stdout)
	failed := false
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "k8s-validate: reading input:", err)
			os.Exit(2)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil || meta.Kind == "" {
			continue // comments only
		}
		r := result{Kind: meta.Kind, Name: meta.Metadata.Name, Status: "valid"}
		gvk := schema.FromAPIVersionAndKind(meta.APIVersion, meta.Kind)
		if !types.Recognizes(gvk) {
			r.Status = "unchecked"
		} else if _, _, err := strict.Decode(doc, nil, nil); err != nil {
			r.Status, r.Error, failed = "invalid", err.Error(), true
		}
		if err := out.Encode(r); err != nil {
			panic(err)
		}
	}
	if failed {
		os.Exit(1)
	}
}
