package models

import (
	"slices"
	"testing"

	"github.com/privtrain/privtrain/nn"
)

// TestNewModelParameterCounts checks the models of Tramèr & Boneh (2021) against counts
// worked out by hand from their shapes, layer by layer: a conv has k·k·C_in·F weights and
// F biases, a dense in·out weights and out biases; the scattering front end and the
// GroupNorms without affine parameters have none.
func TestNewModelParameterCounts(t *testing.T) {
	for _, tc := range []struct {
		spec     nn.Spec
		features []int // the trainable network's input
		layers   []int
		total    int
	}{
		// End-to-end CIFAR-10 CNN, every conv 3×3 padding 1, three 2×2/2 pools: 32 → 16 → 8 → 4.
		//   conv 3→32:    3·3·3·32 + 32   =     864 + 32  =     896
		//   conv 32→32:   3·3·32·32 + 32  =   9,216 + 32  =   9,248
		//   conv 32→64:   3·3·32·64 + 64  =  18,432 + 64  =  18,496
		//   conv 64→64:   3·3·64·64 + 64  =  36,864 + 64  =  36,928
		//   conv 64→128:  3·3·64·128 + 128 = 73,728 + 128 =  73,856
		//   conv 128→128: 3·3·128·128 + 128 = 147,456 + 128 = 147,584
		//   dense 128·4·4 = 2,048 → 128: 262,144 + 128    = 262,272
		//   dense 128 → 10: 1,280 + 10                    =   1,290
		//   total 896 + 9,248 + 18,496 + 36,928 + 73,856 + 147,584 + 262,272 + 1,290 = 550,570
		{CIFAR10TBCNN(Tanh), []int{3, 32, 32}, []int{896, 9248, 18496, 36928, 73856, 147584, 262272, 1290}, 550570},
		{CIFAR10TBCNN(ReLU), []int{3, 32, 32}, []int{896, 9248, 18496, 36928, 73856, 147584, 262272, 1290}, 550570},
		// ScatterNet J=2, L=8: 1 + 2·8 + 8²·2·1/2 = 1 + 16 + 64 = 81 channels per image channel,
		// 28/4 = 7 or 32/4 = 8 pixels a side.
		//   MNIST linear: 81·7·7 = 3,969 inputs · 10 + 10 = 39,690 + 10 = 39,700
		//   The GroupNorm (no affine) and the Flatten after the scattering join the front end
		//   (nn/frontend.go), so the linear models' trainable network takes 81·7·7 = 3,969 and
		//   243·8·8 = 15,552 values; the CNNs' GroupNorm output keeps its image shape.
		{ScatterLinearMNIST(), []int{3969}, []int{39700}, 39700},
		//   CIFAR linear: 3·81 = 243 channels, 243·8·8 = 15,552 inputs · 10 + 10 = 155,520 + 10 = 155,530
		{ScatterLinearCIFAR10(), []int{15552}, []int{155530}, 155530},
		//   MNIST CNN: conv 81→16 3×3 stride 2 pad 1: 7 → (7+2−3)/2+1 = 4; 3·3·81·16 + 16 = 11,664 + 16 = 11,680
		//              conv 16→32 3×3 pad 1 at 4×4: 3·3·16·32 + 32 = 4,608 + 32 = 4,640
		//              dense 32·4·4 = 512 → 32: 16,384 + 32 = 16,416; dense 32 → 10: 320 + 10 = 330
		//              total 11,680 + 4,640 + 16,416 + 330 = 33,066
		{ScatterCNNMNIST(Tanh), []int{81, 7, 7}, []int{11680, 4640, 16416, 330}, 33066},
		{ScatterCNNMNIST(ReLU), []int{81, 7, 7}, []int{11680, 4640, 16416, 330}, 33066},
		//   CIFAR CNN: conv 243→64 3×3 pad 1 at 8×8: 3·3·243·64 + 64 = 139,968 + 64 = 140,032
		//              pool 8 → 4; conv 64→64: 36,864 + 64 = 36,928
		//              dense 64·4·4 = 1,024 → 10: 10,240 + 10 = 10,250
		//              total 140,032 + 36,928 + 10,250 = 187,210
		{ScatterCNNCIFAR10(Tanh), []int{243, 8, 8}, []int{140032, 36928, 10250}, 187210},
		{ScatterCNNCIFAR10(ReLU), []int{243, 8, 8}, []int{140032, 36928, 10250}, 187210},
	} {
		sum := 0
		for _, n := range tc.layers {
			sum += n
		}
		if sum != tc.total {
			t.Fatalf("%s: layer counts %v sum to %d, not %d", tc.spec.Name, tc.layers, sum, tc.total)
		}
		m, err := nn.New(tc.spec, 2)
		if err != nil {
			t.Fatal(err)
		}
		if m.NumParams() != tc.total {
			t.Errorf("%s: %d parameters, want %d", tc.spec.Name, m.NumParams(), tc.total)
		}
		got := make([]int, len(m.ParamLayers()))
		for _, p := range m.Layout() {
			got[slices.IndexFunc(m.ParamLayers(), func(g string) bool { return len(p.Name) > len(g) && p.Name[:len(g)+1] == g+"." })] += p.Size()
		}
		if !slices.Equal(got, tc.layers) {
			t.Errorf("%s: per-layer counts %v, want %v", tc.spec.Name, got, tc.layers)
		}
		if !slices.Equal(m.FeatureShape(), tc.features) || !slices.Equal(m.InputShape(), tc.spec.InputShape) {
			t.Errorf("%s: input %v, trainable network's input %v, want %v and %v", tc.spec.Name, m.InputShape(), m.FeatureShape(), tc.spec.InputShape, tc.features)
		}
		// Every built-in model runs on the native engine: the scattering is a front end.
		if m.Engine() != nn.EngineNative {
			t.Errorf("%s: engine %v (%s)", tc.spec.Name, m.Engine(), m.EngineReason())
		}
	}
}
