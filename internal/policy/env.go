package policy

import (
	"maps"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// The variables a rule sees. Their fields are declared (vars), so that a
// misspelt field fails the load like a misspelt variable does, instead of
// failing every call closed.
const (
	varIdentity = "identity"
	varServer   = "server"
	varTool     = "tool"
	varArgs     = "args"
	varRequest  = "request"
	varResource = "resource"
	varPrompt   = "prompt"
)

// Type names of the declared variables, as CEL's messages show them.
const typePrefix = "hangar."

var (
	stringListType = types.NewListType(types.StringType)
	jsonObject     = types.NewMapType(types.StringType, types.DynType)
)

// vars are the variables and, for each, its fields and their types
// (args is a JSON object: any key, any JSON value).
var vars = map[string]map[string]*types.Type{
	varIdentity: {
		"name":    types.StringType,
		"subject": types.StringType,
		"issuer":  types.StringType,
		"scopes":  stringListType,
		"claims":  jsonObject,
		"groups":  stringListType,
	},
	varServer: {
		"id":     types.StringType,
		"source": types.StringType,
		"labels": types.NewMapType(types.StringType, types.StringType),
		"image":  types.StringType,
	},
	varTool: {
		"name":        types.StringType,
		"callable":    types.StringType,
		"annotations": jsonObject,
	},
	varArgs: nil,
	varRequest: {
		"protocol": types.StringType,
		"time":     types.TimestampType,
		"method":   types.StringType,
	},
	varResource: {"uri": types.StringType},
	varPrompt:   {"name": types.StringType},
}

// VarNames lists the variables, sorted (docs and tests).
func VarNames() []string { return slices.Sorted(maps.Keys(vars)) }

// provider declares the variables' types to the checker. Values are Go
// maps at run time: the checker knows the fields, and the interpreter
// reads map keys (a field with no GetFrom is read as a map key).
type provider struct {
	*types.Registry
}

func structFields(name string) (map[string]*types.Type, bool) {
	if len(name) <= len(typePrefix) || name[:len(typePrefix)] != typePrefix {
		return nil, false
	}
	f, ok := vars[name[len(typePrefix):]]
	return f, ok && f != nil
}

func (p provider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := structFields(name); ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Registry.FindStructType(name)
}

func (p provider) FindStructFieldNames(name string) ([]string, bool) {
	if f, ok := structFields(name); ok {
		out := make([]string, 0, len(f))
		for k := range f {
			out = append(out, k)
		}
		slices.Sort(out)
		return out, true
	}
	return p.Registry.FindStructFieldNames(name)
}

func (p provider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if f, ok := structFields(name); ok {
		t, found := f[field]
		if !found {
			return nil, false
		}
		return &types.FieldType{Type: t}, true
	}
	return p.Registry.FindStructFieldType(name, field)
}

// env is the one CEL environment every rule compiles in: the standard
// library, optional values (x.?y, orValue), numbers compared across types
// (a JSON number is a double: args.amount > 100 holds for 500), and no
// extension library (each costs binary size and none is needed here).
var env = sync.OnceValues(func() (*cel.Env, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	opts := []cel.EnvOption{
		cel.CustomTypeProvider(provider{reg}),
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		cel.OptionalTypes(),
		cel.ParserExpressionSizeLimit(maxWhenLen),
	}
	for _, name := range VarNames() {
		t := jsonObject
		if vars[name] != nil {
			t = types.NewObjectType(typePrefix + name)
		}
		opts = append(opts, cel.Variable(name, t))
	}
	return cel.NewEnv(opts...)
})

// wideEnv is env for a layer's combined conditions (one program of all
// its deny rules, one of its allow rules): its expressions are as long as
// the rules together.
var wideEnv = sync.OnceValues(func() (*cel.Env, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	return e.Extend(cel.ParserExpressionSizeLimit(2 * MaxRules * (maxWhenLen + 8)))
})

// adapter turns the Go values of a call (decoded arguments, claims) into
// CEL values.
func adapter() types.Adapter {
	e, err := env()
	if err != nil {
		return types.DefaultTypeAdapter
	}
	return e.CELTypeAdapter()
}
