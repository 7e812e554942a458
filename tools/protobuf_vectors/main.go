// Command protobuf_vectors writes the protobuf test vectors of tests/api/protobuf_vectors/: CustomResourceDefinitions
// built from JSON with upstream's own types (k8s.io/apiextensions-apiserver v0.32.13), each written as upstream's
// protobuf serializer writes it (<name>.pb: "k8s\x00" + runtime.Unknown) and as Go's JSON writes the same object
// (<name>.json), which is what tinykube's decoder must give for the .pb.
//
// Run from the repository root, with Go and the module proxy:
//
//	(cd tools/protobuf_vectors && go run . ../../tests/api/protobuf_vectors)
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// Each CRD as compact JSON: apiextensions' JSON values (default, example, enum) keep the bytes they were read
// from, so compact input gives compact raw values on the wire.
var crds = map[string]string{
	// A CRD tinykube serves (structural schema, no conversion webhook): the end-to-end test creates it.
	"crd-served": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",` +
		`"metadata":{"name":"gadgets.proto.example.com","labels":{"app":"proto"},"annotations":{"note":"vectors"}},` +
		`"spec":{"group":"proto.example.com","scope":"Namespaced",` +
		`"names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","listKind":"GadgetList",` +
		`"shortNames":["gd"],"categories":["all","proto"]},` +
		`"versions":[{"name":"v1","served":true,"storage":true,` +
		`"schema":{"openAPIV3Schema":{"type":"object","description":"A gadget.",` +
		`"required":["spec"],` +
		`"properties":{"spec":{"type":"object",` +
		`"x-kubernetes-validations":[{"rule":"self.replicas <= self.maxReplicas","message":"too many",` +
		`"fieldPath":".replicas","reason":"FieldValueInvalid"},` +
		`{"rule":"self.mode != 'off' || !has(oldSelf.mode)","messageExpression":"'mode ' + self.mode",` +
		`"optionalOldSelf":true}],` +
		`"properties":{` +
		`"mode":{"type":"string","default":"auto","enum":["auto","manual","off"],"example":"manual"},` +
		`"replicas":{"type":"integer","format":"int32","default":3,"minimum":0,"maximum":100},` +
		`"maxReplicas":{"type":"integer","default":10,"minimum":1},` +
		`"ratio":{"type":"number","default":1.5,"minimum":-2.25,"exclusiveMinimum":true,"maximum":1e3,` +
		`"multipleOf":0.25},` +
		`"enabled":{"type":"boolean","default":false},` +
		`"labels":{"type":"object","default":{"tier":"web","zone":"a"},` +
		`"additionalProperties":{"type":"string","maxLength":63,"minLength":0}},` +
		`"ports":{"type":"array","default":[{"name":"http","port":80}],"maxItems":8,"minItems":0,` +
		`"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],` +
		`"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string","pattern":"^[a-z]+$"},` +
		`"port":{"type":"integer","x-kubernetes-int-or-string":false}}}},` +
		`"tags":{"type":"array","default":["a","b"],"x-kubernetes-list-type":"set",` +
		`"items":{"type":"string"}},` +
		`"target":{"x-kubernetes-int-or-string":true,"default":"50%"},` +
		`"template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},` +
		`"settings":{"type":"object","x-kubernetes-map-type":"atomic","nullable":true,` +
		`"maxProperties":4,"minProperties":0,"additionalProperties":{"type":"integer"}},` +
		`"extra":{"type":"object",` +
		`"properties":{"note":{"type":"string","title":"Note","default":"","externalDocs":{"description":"docs","url":"https://example.com"}}}}` +
		`}},` +
		`"status":{"type":"object","properties":{"replicas":{"type":"integer"},"selector":{"type":"string"}}}}}},` +
		`"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas",` +
		`"labelSelectorPath":".status.selector"}},` +
		`"additionalPrinterColumns":[{"name":"Mode","type":"string","jsonPath":".spec.mode"},` +
		`{"name":"Replicas","type":"integer","format":"int32","description":"wanted","priority":1,"jsonPath":".spec.replicas"}],` +
		`"selectableFields":[{"jsonPath":".spec.mode"}]},` +
		`{"name":"v1beta1","served":true,"storage":false,"deprecated":true,"deprecationWarning":"use v1",` +
		`"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}],` +
		`"conversion":{"strategy":"None"},"preserveUnknownFields":false}}`,
	// Every JSONSchemaProps form and a conversion webhook: not a CRD any apiserver would accept, only encodings.
	"crd-forms": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",` +
		`"metadata":{"name":"forms.proto.example.com","creationTimestamp":"2024-01-02T03:04:05Z","generation":2,` +
		`"finalizers":["customresourcecleanup.apiextensions.k8s.io"]},` +
		`"spec":{"group":"proto.example.com","scope":"Cluster","names":{"plural":"forms","kind":"Form"},` +
		`"versions":[{"name":"v1","served":false,"storage":true,"schema":{"openAPIV3Schema":{` +
		`"id":"forms","$schema":"http://json-schema.org/draft-04/schema#","$ref":"#/definitions/base",` +
		`"type":"object","default":{"list":[1,2.5,"x",true,null,{"k":[]}],"n":null},"example":[{"a":1}],` +
		`"enum":["a",1,-2,0.5,true,false,null,{"o":{}},[]],` +
		`"exclusiveMaximum":true,"uniqueItems":true,"maximum":-0.5,"minimum":0,"multipleOf":1e-7,"maxLength":0,"minLength":0,` +
		`"maxItems":0,"minItems":0,"maxProperties":0,"minProperties":0,` +
		`"items":[{"type":"string"},{"type":"integer"}],` +
		`"additionalItems":false,` +
		`"allOf":[{"required":["a"]}],"oneOf":[{"type":"string"},{"type":"number"}],"anyOf":[{}],"not":{"type":"null"},` +
		`"properties":{"open":{"additionalProperties":true},"closed":{"additionalProperties":false},` +
		`"typed":{"additionalProperties":{"type":"string"}},"arr":{"items":{"type":"boolean"}},"empty":{}},` +
		`"patternProperties":{"^x-":{"type":"string"}},` +
		`"dependencies":{"a":["b","c"],"d":{"required":["e"]}},` +
		`"additionalProperties":{"properties":{"p":{"additionalItems":{"type":"string"}}}},` +
		`"definitions":{"base":{"type":"object","x-kubernetes-preserve-unknown-fields":false}},` +
		`"x-kubernetes-validations":[{"rule":"true"}]` +
		`}}}],` +
		`"conversion":{"strategy":"Webhook","webhook":{"clientConfig":{"service":{"namespace":"ns","name":"conv",` +
		`"path":"/convert","port":8443},"caBundle":"AAECAwQF/w=="},"conversionReviewVersions":["v1","v1beta1"]}}},` +
		`"status":{"conditions":[{"type":"Established","status":"True","lastTransitionTime":"2024-01-02T03:04:05Z",` +
		`"reason":"InitialNamesAccepted","message":"the initial names have been accepted"}],` +
		`"acceptedNames":{"plural":"forms","kind":"Form"},"storedVersions":["v1"]}}`,
	// The smallest CRD, and a conversion webhook by URL.
	"crd-small": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",` +
		`"metadata":{"name":"smalls.proto.example.com"},` +
		`"spec":{"group":"proto.example.com","scope":"Namespaced","names":{"plural":"smalls","kind":"Small"},` +
		`"versions":[{"name":"v1","served":true,"storage":true}],` +
		`"conversion":{"strategy":"Webhook","webhook":{"clientConfig":{"url":"https://conv.example.com/c"},` +
		`"conversionReviewVersions":["v1"]}}}}`,
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: protobuf_vectors <output directory>")
		os.Exit(2)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	serializer := protobuf.NewSerializer(scheme, scheme)
	for name, text := range crds {
		var crd apiextensionsv1.CustomResourceDefinition
		decoder := json.NewDecoder(bytes.NewReader([]byte(text)))
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(&crd); err != nil {
			panic(fmt.Sprintf("%s: %v", name, err))
		}
		var body bytes.Buffer
		if err := serializer.Encode(&crd, &body); err != nil {
			panic(fmt.Sprintf("%s: %v", name, err))
		}
		asJSON, err := json.Marshal(&crd)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", name, err))
		}
		write(filepath.Join(os.Args[1], name+".pb"), body.Bytes())
		write(filepath.Join(os.Args[1], name+".json"), append(asJSON, '\n'))
	}
}

func write(path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		panic(err)
	}
}
