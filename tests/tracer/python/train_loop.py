# A plain PyTorch CPU training loop with no collscope code: `collscope trace` annotates it (python_annotation_test).
# Usage: train_loop.py STEPS. Each step: a forward through nested modules, backward, an optimizer step; after each
# step an evaluation forward without grad (a forward range in no step).
import sys

import torch

steps = int(sys.argv[1])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
x, y = torch.randn(64, 16), torch.randn(64, 1)
for _ in range(steps):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        model(x)
print("trained %d steps, loss %.4f" % (steps, loss.item()))
